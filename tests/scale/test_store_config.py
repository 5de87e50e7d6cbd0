"""``[store]`` in the config: the backend and the JetStream settings, checked by the loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiond.service.config import Config, ConfigError, load_config
from sessiond.store.backend import LocalStore, open_store


def load(tmp_path: Path, text: str) -> Config:
    (tmp_path / "config.toml").write_text(text)
    return load_config({"SESSIOND_CONFIG": str(tmp_path / "config.toml")}, root=tmp_path / "store")


def test_local_is_the_default(tmp_path: Path) -> None:
    config = load(tmp_path, "")
    assert config.store_backend == "local"
    assert isinstance(open_store(config.store_backend, tmp_path, config.jetstream), LocalStore)


def test_jetstream_settings_are_read(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        '[store]\nbackend = "jetstream"\n[store.jetstream]\nservers = ["nats://h1:4222", "nats://h2:4222"]\n'
        'replicas = 1\nack_wait = 2.5\nstream = "S1"\n',
    )
    assert config.store_backend == "jetstream"
    js = config.jetstream
    assert js.servers == ("nats://h1:4222", "nats://h2:4222")
    assert (js.replicas, js.ack_wait, js.stream, js.kv_bucket) == (1, 2.5, "S1", "sessiond-sessions")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('[store]\nbackend = "s3"\n', "store.backend"),
        ("[store]\nshards = 2\n", "store"),
        ("[store.jetstream]\nservers = []\n", "store.jetstream.servers"),
        ('[store.jetstream]\nservers = ["http://x"]\n', "store.jetstream.servers"),
        ("[store.jetstream]\nreplicas = 7\n", "store.jetstream.replicas"),
        ("[store.jetstream]\nack_wait = 0\n", "store.jetstream.ack_wait"),
        ('[store.jetstream]\nstream = "a.b"\n', "store.jetstream.stream"),
        ("[store.jetstream]\nspeed = 1\n", "store.jetstream"),
    ],
)
def test_bad_settings_name_their_field(tmp_path: Path, text: str, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    assert info.value.data.get("field") == field
