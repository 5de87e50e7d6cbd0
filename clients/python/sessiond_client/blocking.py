"""The blocking twin of an async client method, for :class:`~sessiond_client.sync.SessiondSyncClient`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")


class Runner(Protocol):
    """What a blocking client offers its twins: the async client and a way to run on its loop."""

    @property
    def aclient(self) -> Any: ...

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = ...) -> T: ...


class Blocking(Generic[P, R]):
    """A blocking twin of an async client method: same parameters (for the type checker too,
    through the ``ParamSpec``), same result, run with the blocking client's ``run``."""

    def __init__(self, method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]) -> None:
        self.method = method
        self.__name__ = self.__qualname__ = method.__name__
        self.__doc__ = method.__doc__
        self.__signature__ = inspect.signature(method)
        parameters = list(self.__signature__.parameters.values())[1:]  # without the client
        self._bound_signature = self.__signature__.replace(parameters=parameters)

    @overload
    def __get__(self, client: None, owner: type) -> Blocking[P, R]: ...
    @overload
    def __get__(self, client: Runner, owner: type) -> Callable[P, R]: ...
    def __get__(self, client: Runner | None, owner: type) -> Blocking[P, R] | Callable[P, R]:
        if client is None:
            return self
        method = self.method

        @functools.wraps(self.method)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return client.run(method(client.aclient, *args, **kwargs))

        call.__signature__ = self._bound_signature  # type: ignore[attr-defined]
        return call

    def __call__(self, client: Runner, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return client.run(self.method(client.aclient, *args, **kwargs))
