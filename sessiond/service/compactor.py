"""Compaction in the daemon: when to compact, who summarises, and how the checkpoint lands.

The pure parts decide (``compaction.prepare``: what to summarise and keep; ``compaction.policy``:
whether an appended assistant message calls for a compaction). This module orchestrates:

* **one compaction per session at a time** — a second one is refused with the running one's
  id; the session stays open while one runs, even if every client leaves;
* **summarizers** chosen per run: a capable client of the session, else the configured
  command, else the configured HTTP endpoint, else the built-in extractive summarizer;
* **the checkpoint** is appended as a child of the leaf *at the time it is written*. Entries
  appended while the summary was being written therefore sit between the first kept entry
  and the checkpoint: they are part of the kept range and stay in the context verbatim. A
  branch that changed otherwise (the leaf moved off the prepared branch, another checkpoint
  was written) makes the compaction fail as stale — nothing is written;
* **failure and cancellation** write nothing and leave nothing armed: no preparation, no
  lock, no retry flag (the next trigger starts afresh);
* **progress** as ``session/update`` ``compaction_update`` to subscribers (``in_progress``,
  then ``completed``/``failed``/``cancelled``) and ``$/progress`` for a request that asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
from collections import OrderedDict
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import anyio

from sessiond_protocol import methods as M

from ..compaction import policy
from ..compaction.prepare import CompactionPreparation, CompactionSettings, NoCompaction
from ..compaction.summary import (
    SummaryResponse,
    assemble,
    combine_usage,
    describe_preparation,
    failure,
    requests_for,
)
from ..errors import (
    CompactionRunningError,
    InvalidArgumentError,
    NothingToCompactError,
    PreparationStaleError,
    SummarizerUnavailableError,
    SummaryRefusedError,
)
from ..model import entries as E
from ..model.js import get, key, truthy
from ..store.journal import Durability
from ..store.session import PendingAppend, Session
from . import compaction_settings as cs
from . import microcompaction
from .config import Config
from .peer import ERROR, WARNING, Peer
from .registry import SessionRegistry
from .settings import SessionSettings
from .summarizers.choose import choose_summarizer

if TYPE_CHECKING:
    from .host import SessionHost

log = logging.getLogger("sessiond.compaction")

Reason = Literal["manual", "threshold", "overflow"]
Progress = Callable[[str, int | None], None]
MAX_PREPARATIONS = 8
"""Preparations remembered per session for ``compaction/commit`` (older ones are stale)."""


@dataclass(slots=True)
class _Preparation:
    leaf: Any
    first_kept: Any
    tokens_before: int
    details: dict[str, list[str]]


@dataclass(slots=True)
class Running:
    id: str
    session_id: str
    reason: Reason
    will_retry: bool
    task: asyncio.Task[Any] | None = None


def _new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(6)}"


def _int(tokens: float) -> int:
    return int(tokens) if math.isfinite(tokens) else 0


class Compactor:
    def __init__(self, registry: SessionRegistry, settings: SessionSettings, config: Config) -> None:
        self.registry = registry
        self.session_settings = settings
        """The per-session settings (the compaction table and the context window live there)."""
        self.config = config
        self.estimator = registry.estimator
        self.running: dict[str, Running] = {}
        self.recovery: dict[str, bool] = {}
        """Sessions inside an overflow recovery window (one compact-and-retry was attempted)."""
        self._preparations: dict[str, OrderedDict[str, _Preparation]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._settings: dict[str, tuple[Any, Any, cs.Settings]] = {}
        """Per session: the defaults and sidecar its settings were resolved from, and them."""

    def forget(self, session_id: str) -> None:
        """Drop what is kept for a session that was closed, so a long-lived daemon stays flat."""
        self._preparations.pop(session_id, None)
        self._settings.pop(session_id, None)
        if session_id not in self.running:
            self.recovery.pop(session_id, None)

    # ------------------------------------------------------------------ settings

    def settings(self, session_id: str) -> cs.Settings:
        """The session's settings: daemon defaults, then what the session set.

        Resolved again only when either changed (a settings update replaces the sidecar's dict):
        they are read after every appended message, and resolving them cost ~10% of an append.
        """
        base = self.config.compaction
        sidecar = self.session_settings.get(session_id)
        cached = self._settings.get(session_id)
        if cached is not None and cached[0] is base and cached[1] is sidecar:
            return cached[2]
        settings = self._resolve_settings(session_id, base, sidecar)
        self._settings[session_id] = (base, sidecar, settings)
        return settings

    def _resolve_settings(self, session_id: str, base: cs.Settings, sidecar: dict[str, Any]) -> cs.Settings:
        try:
            settings = cs.apply(base, sidecar.get("compaction") or {})
        except InvalidArgumentError as exc:  # a hand-edited sidecar: keep working on defaults
            log.warning("session %s: ignoring its compaction settings: %s", session_id, exc.message)
            settings = base
        window = sidecar.get("contextWindow")
        if type(window) is int and window > 0:
            settings = replace(settings, context_window=window)
        return settings

    def describe_settings(self, host: SessionHost) -> M.SettingsResult:
        settings = self.settings(host.id)
        model = host.session.context().settings.model
        resolved = settings.for_model(model)
        return M.SettingsResult.model_construct(
            **settings.as_json(),
            effective={
                "reserveTokens": resolved.reserve_tokens,
                "keepRecentTokens": resolved.keep_recent_tokens,
                "contextWindow": self.registry.window_for(host.session, model),
                "model": model,
            },
        )

    async def update_settings(
        self, user: Peer, session_id: str, values: dict[str, Any] | None
    ) -> M.SettingsResult:
        host = await self.registry.host(session_id, user)
        if values:
            current = self.settings(session_id)
            updated = cs.apply(current, values, "set")  # raises before anything is stored
            changes: dict[str, Any] = {"compaction": cs.stored(updated, self.config.compaction) or None}
            if "contextWindow" in values:
                changes["contextWindow"] = updated.context_window
            self.session_settings.update(session_id, **changes)
            host.publish_usage()
        return self.describe_settings(host)

    def _token_settings(
        self, host: SessionHost, keep_recent: int | None, reserve: int | None
    ) -> tuple[cs.Settings, CompactionSettings]:
        settings = self.settings(host.id)
        resolved = settings.for_model(host.session.context().settings.model)
        if keep_recent is not None:
            resolved = replace(resolved, keep_recent_tokens=keep_recent)
        if reserve is not None:
            resolved = replace(resolved, reserve_tokens=reserve)
        return settings, resolved

    # ------------------------------------------------------------------ preparing

    async def _prepare(
        self, host: SessionHost, settings: CompactionSettings
    ) -> tuple[Any, CompactionPreparation | NoCompaction]:
        """The preparation and the leaf it was made at (one consistent view, off the loop)."""
        session = host.pi_session("compacting")

        def prepare() -> tuple[Any, CompactionPreparation | NoCompaction]:
            leaf, prep = session.prepare_compaction_at_leaf(settings, self.estimator)
            if isinstance(prep, CompactionPreparation):
                prep.materialize()  # the messages to summarise are parsed here, not on the loop
            return leaf, prep

        return await anyio.to_thread.run_sync(prepare)

    async def prepare(
        self,
        user: Peer | None,
        session_id: str,
        keep_recent: int | None,
        reserve: int | None,
        custom_instructions: str | None,
    ) -> M.PrepareResult:
        host = await self.registry.host(session_id, user)
        _, resolved = self._token_settings(host, keep_recent, reserve)
        leaf, prep = await self._prepare(host, resolved)
        if isinstance(prep, NoCompaction):
            return M.PrepareResult.model_construct(prepared=False, reason=prep.reason, message=prep.message)
        prep_id = _new_id("p")
        described = describe_preparation(prep, custom_instructions, self._max_tokens(resolved))
        stored = self._preparations.setdefault(session_id, OrderedDict())
        stored[prep_id] = _Preparation(
            leaf,
            prep.first_kept_entry_id,
            _int(prep.tokens_before),
            {"readFiles": described["readFiles"], "modifiedFiles": described["modifiedFiles"]},
        )
        while len(stored) > MAX_PREPARATIONS:
            stored.popitem(last=False)
        return M.PrepareResult.model_construct(prepared=True, preparationId=prep_id, **described)

    @staticmethod
    def _max_tokens(settings: CompactionSettings) -> int:
        """The summary's output budget: 80% of the reserve (Pi's compaction budget)."""
        return max(256, math.floor(0.8 * settings.reserve_tokens))

    # ------------------------------------------------------------------ freshness

    @staticmethod
    def _check_fresh(session: Session, prepared_leaf: Any) -> None:
        """The branch may only have grown since the preparation (and not by a checkpoint)."""
        tree = session.tree
        target = key(prepared_leaf)
        current = session.leaf_id
        while True:
            if key(current) == target:
                return
            light = tree.get(current) if truthy(current) else None
            if light is None:
                raise PreparationStaleError(
                    "The branch changed since the compaction was prepared (the leaf moved off it)",
                    preparedLeafId=prepared_leaf,
                    currentLeafId=session.leaf_id,
                )
            if get(light, "type") == E.COMPACTION:
                raise PreparationStaleError(
                    "The branch was compacted since the compaction was prepared",
                    compactionEntryId=get(light, "id"),
                )
            current = get(light, "parentId")

    # ------------------------------------------------------------------ committing

    def _begin(self, host: SessionHost, reason: Reason, will_retry: bool = False) -> Running:
        running = self.running.get(host.id)
        if running is not None:
            raise CompactionRunningError(host.id, running.id)
        run = Running(_new_id("c"), host.id, reason, will_retry)
        self.running[host.id] = run
        return run

    def _end(self, host: SessionHost, run: Running, pin: int | None = None) -> None:
        if self.running.get(host.id) is run:
            del self.running[host.id]
        if pin is not None:
            self.registry.unpin(host, pin)

    def _update(self, host: SessionHost, run: Running, status: str, **fields: Any) -> None:
        update = {
            "sessionUpdate": "compaction_update",
            "compactionId": run.id,
            "status": status,
            "reason": run.reason,
            "willRetry": run.will_retry and status in ("in_progress", "completed"),
        }
        update.update({k: v for k, v in fields.items() if v is not None})
        self.registry.hub.publish(host.id, update)

    async def _write(
        self,
        host: SessionHost,
        spec: dict[str, Any],
        prepared_leaf: Any,
        durability: str | None,
    ) -> str:
        mode = None if durability is None else Durability(durability)

        def write(session: Session) -> PendingAppend:
            self._check_fresh(session, prepared_leaf)  # under the write order: nothing moved since
            return session.begin_append([spec], durability=mode)

        pending = await host.commit(write)
        self._preparations.pop(host.id, None)  # every earlier preparation is stale now
        return pending.entry_ids[0]

    def _tokens_after(self, host: SessionHost) -> int | None:
        tokens = host.session.context_usage(self.estimator).tokens
        return _int(tokens) if math.isfinite(tokens) else None

    async def commit(
        self,
        user: Peer | None,
        session_id: str,
        summary: str,
        first_kept: Any,
        tokens_before: int,
        preparation_id: str | None,
        details: Any,
        usage: Any,
        from_hook: bool | None,
        durability: str | None,
    ) -> M.CompactionResult:
        host = await self.registry.host(session_id, user)
        prepared_leaf: Any = host.session.leaf_id
        if preparation_id is not None:
            prep = self._preparations.get(session_id, OrderedDict()).get(preparation_id)
            if prep is None:
                raise PreparationStaleError(
                    f"Preparation {preparation_id} is unknown or stale (the session was compacted "
                    "or prepared again since); prepare again",
                    preparationId=preparation_id,
                )
            if key(first_kept) != key(prep.first_kept):
                raise InvalidArgumentError(
                    f"firstKeptEntryId {first_kept} differs from the preparation's {prep.first_kept}",
                    field="firstKeptEntryId",
                )
            prepared_leaf = prep.leaf
            if details is None:
                details = prep.details
        run = self._begin(host, "manual")
        try:
            spec: dict[str, Any] = {
                "type": E.COMPACTION,
                "summary": summary,
                "firstKeptEntryId": first_kept,
                "tokensBefore": tokens_before,
            }
            if details is not None:
                spec["details"] = details
            if usage is not None:
                spec["usage"] = usage
            if from_hook is not None:
                spec["fromHook"] = from_hook
            entry_id = await self._write(host, spec, prepared_leaf, durability)
            after = self._tokens_after(host)
            self._update(
                host,
                run,
                "completed",
                summary=summary,
                entryId=entry_id,
                tokensBefore=tokens_before,
                tokensAfter=after,
            )
            return M.CompactionResult.model_construct(
                compactionId=run.id,
                entryId=entry_id,
                firstKeptEntryId=first_kept,
                tokensBefore=tokens_before,
                tokensAfter=after,
                summary=summary,
                summarizer=None,
            )
        finally:
            self._end(host, run)

    # ------------------------------------------------------------------ running

    async def run(
        self,
        user: Peer | None,
        session_id: str,
        reason: Reason = "manual",
        custom_instructions: str | None = None,
        keep_recent: int | None = None,
        reserve: int | None = None,
        summarizer: str = "auto",
        progress: Progress | None = None,
    ) -> M.CompactionResult:
        """``compaction/run``: compact now, in this request (cancelling it cancels the run)."""
        host = await self.registry.host(session_id, user)
        run = self._begin(host, reason)
        run.task = asyncio.current_task()
        pin = self.registry.pin(host)  # the session stays open while it runs, even if its clients leave
        try:
            return await self._compact(
                host, run, custom_instructions, keep_recent, reserve, summarizer, user, progress, False
            )
        finally:
            self._end(host, run, pin)

    async def _compact(
        self,
        host: SessionHost,
        run: Running,
        custom_instructions: str | None,
        keep_recent: int | None,
        reserve: int | None,
        choice: str,
        requester: Peer | None,
        progress: Progress | None,
        announced: bool,
    ) -> M.CompactionResult:
        """Prepare, summarise, write. Every way out but success publishes why."""

        def report(message: str, percentage: int | None) -> None:
            if progress is not None:
                progress(message, percentage)

        status, error = "failed", "interrupted"
        try:
            report("Preparing the compaction", 0)
            _, resolved = self._token_settings(host, keep_recent, reserve)
            leaf, prep = await self._prepare(host, resolved)
            if isinstance(prep, NoCompaction):
                error = prep.message
                raise NothingToCompactError(prep.reason, prep.message)
            if choice == "auto":
                choice = self.settings(host.id).summarizer
            client = self.registry.summarizing_client(host, requester)
            summarizer = choose_summarizer(choice, self.config.summarizer, client, host.id, run.id)
            if not announced:
                self._update(host, run, "in_progress", tokensBefore=_int(prep.tokens_before))
                announced = True
            requests = requests_for(prep, custom_instructions, self._max_tokens(resolved))
            texts: dict[str, str] = {}
            usages: list[dict[str, Any] | None] = []
            for n, request in enumerate(requests):
                count = len(request.messages)
                what = "history" if request.kind == "history" else "split turn's beginning"
                report(
                    f"Summarizing the {what} ({count} messages) with the {summarizer.name} summarizer",
                    10 + 80 * n // len(requests),
                )
                response: SummaryResponse = await summarizer.summarize(request)
                label = "Summarization" if request.kind == "history" else "Turn prefix summarization"
                refused = failure(response, label)
                if refused is not None:
                    error = refused
                    raise SummaryRefusedError(refused, summarizer.name, response.stop_reason)
                texts[request.kind] = response.text
                usages.append(response.usage)
            summary, details = assemble(prep, texts.get("history"), texts.get("turn_prefix"))
            report("Writing the checkpoint", 95)
            spec: dict[str, Any] = {
                "type": E.COMPACTION,
                "summary": summary,
                "firstKeptEntryId": prep.first_kept_entry_id,
                "tokensBefore": _int(prep.tokens_before),
                "details": details,
            }
            usage = combine_usage(usages)
            if usage is not None:
                spec["usage"] = usage
            try:
                entry_id = await self._write(host, spec, leaf, None)
            except PreparationStaleError as exc:
                error = exc.message
                raise
            after = self._tokens_after(host)
            self._update(
                host,
                run,
                "completed",
                summary=summary,
                entryId=entry_id,
                tokensBefore=_int(prep.tokens_before),
                tokensAfter=after,
            )
            status = "completed"
            return M.CompactionResult.model_construct(
                compactionId=run.id,
                entryId=entry_id,
                firstKeptEntryId=prep.first_kept_entry_id,
                tokensBefore=_int(prep.tokens_before),
                tokensAfter=after,
                summary=summary,
                summarizer=summarizer.name,
            )
        except asyncio.CancelledError:
            status, error = "cancelled", "The compaction was cancelled; nothing was written"
            raise
        except SummarizerUnavailableError as exc:
            error = exc.message
            raise
        except Exception as exc:
            if error == "interrupted":
                error = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if status != "completed":
                if run.will_retry or status == "cancelled":
                    self.recovery.pop(host.id, None)  # nothing armed: the next overflow starts afresh
                if announced:
                    self._update(host, run, status, error=error)

    # ------------------------------------------------------------------ background

    def spawn(self, host: SessionHost, reason: Reason, will_retry: bool = False) -> Running | None:
        """Start an automatic compaction (threshold or overflow) in the background."""
        if host.id in self.running:
            return None
        run = self._begin(host, reason, will_retry)
        pin = self.registry.pin(host)
        self._update(host, run, "in_progress")

        async def background() -> None:
            try:
                await self._compact(host, run, None, None, None, "auto", None, None, True)
            except asyncio.CancelledError:
                pass
            except NothingToCompactError as exc:
                log.info("session %s: %s compaction: %s", host.id, reason, exc.message)
            except Exception as exc:
                message = getattr(exc, "message", None) or str(exc)
                self.registry.tell(host.id, WARNING, f"{reason} compaction failed: {message}")
            finally:
                self._end(host, run, pin)

        task = asyncio.get_running_loop().create_task(background(), name=f"compaction {run.id}")
        run.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return run

    def cancel(self, session_id: str) -> str | None:
        """Cancel the session's running compaction (any origin); its id, or None."""
        run = self.running.get(session_id)
        if run is None or run.task is None:
            return None
        run.task.cancel()
        return run.id

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with anyio.CancelScope(shield=True), contextlib.suppress(BaseException):
                await task  # shutting down: the outcome was published

    # ------------------------------------------------------------------ policy

    def after_append(self, host: SessionHost, entry_ids: list[str]) -> None:
        """Pi's checks after a client appended entries: recovery resets, micro-compaction,
        overflow recovery and the threshold (docs/pi-format.md §8.1).

        The checks (:meth:`_policy`) yield the edits they write. A local session writes them
        inline, as the append itself was; a shared one (JetStream) in the background, in a
        worker thread under the host's write order, the checks going on after each commit —
        so a cluster that is slow to acknowledge holds this session's writes, not the loop.
        """
        steps = self._policy(host, entry_ids)
        if host.shared():
            try:
                specs = next(steps)  # the checks up to the first write run now, as they would inline
            except StopIteration:
                return
            self._background(self._write_shared(host, steps, specs))
            return
        for_write = next(steps, None)
        while for_write is not None:
            try:
                pending = host.writer().begin_append(for_write)
            except Exception as exc:
                for_write = _resume(steps, exc)
                continue
            host.announce(pending.entry_ids)
            if pending.needs_sync:
                self._background(anyio.to_thread.run_sync(pending.wait))
            for_write = _resume(steps, pending)

    async def _write_shared(self, host: SessionHost, steps: PolicySteps, specs: list[dict[str, Any]]) -> None:
        """Commit the edits the checks yield, in order, each after the previous (see above)."""
        for_write: list[dict[str, Any]] | None = specs
        while for_write is not None:
            try:
                pending = await _commit(host, for_write)
            except Exception as exc:
                for_write = _resume(steps, exc)
                continue
            for_write = _resume(steps, pending)

    def _policy(self, host: SessionHost, entry_ids: list[str]) -> PolicySteps:
        """The checks of :meth:`after_append`; each ``yield`` hands over edits to write and gets
        what was written (or the write's exception, raised at the ``yield``)."""
        session = host.session
        messages: list[tuple[Any, Any]] = []
        for entry_id in entry_ids:
            light = session.tree.get(entry_id)
            if get(light, "type") == E.MESSAGE:
                messages.append((entry_id, get(get(light, "message"), "role")))
        if not messages:
            return
        sid = host.id
        settings: cs.Settings | None = None
        last_assistant: Any = None
        for entry_id, role in messages:
            if role == "user":  # a user turn ends a recovery window: no body needed to say so
                self.recovery.pop(sid, None)
            elif role == "assistant":
                entry = session.get(entry_id)
                if policy.resets_recovery(get(entry, "message")):
                    self.recovery.pop(sid, None)
                last_assistant = entry
        if sid in self.running:
            return
        settings = self.settings(sid)
        if settings.microcompact.enabled:
            clearing = microcompaction.automatic(host, settings.microcompact, messages, self.estimator)
            if clearing is not None:
                yield clearing
        if last_assistant is None or not settings.enabled:
            return
        if isinstance(session, Session):
            view = session.context_view()  # the projection only if the check needs it
        else:
            view = policy.ContextView.of(session.context())
        model = view.model
        resolved = settings.for_model(model)
        position = entry_ids.index(str(get(last_assistant, "id")))
        tail = [session.get(i) for i in entry_ids[position + 1 :]]
        decision = policy.check(
            entry=last_assistant,
            tail=[t for t in tail if t is not None],
            projection=view,
            estimate=session.context_usage(self.estimator),
            estimator=self.estimator,
            enabled=settings.enabled,
            context_window=self.registry.window_for(session, model),
            reserve_tokens=resolved.reserve_tokens,
            max_output_tokens=settings.max_output_tokens,
            recovery_attempted=self.recovery.get(sid, False),
        )
        if decision.action == "none":
            return
        log.info("session %s: %s (%s)", host.id, decision.action, decision.why)
        if decision.action == "recovery_failed":
            run = Running(_new_id("c"), host.id, "overflow", False)
            self._update(host, run, "failed", error=decision.error)
            return
        if decision.action == "overflow" and decision.will_retry:
            self.recovery[host.id] = True
            specs = [{"type": E.CONTEXT_EDIT, "targetId": i, "replacement": None} for i in decision.omit]
            try:
                yield specs
            except Exception as exc:
                self.registry.tell(host.id, ERROR, f"cannot omit the failed attempt before retrying: {exc}")
                self.recovery.pop(host.id, None)
                return
        self.spawn(host, "overflow" if decision.action == "overflow" else "threshold", decision.will_retry)

    def _background(self, awaitable: Any) -> None:
        async def wait() -> None:
            try:
                await awaitable
            except Exception as exc:  # a failed fsync is reported by the next write
                log.warning("background write failed: %s", exc)

        task = asyncio.get_running_loop().create_task(wait())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ micro-compaction and snip

    async def microcompact(
        self,
        user: Peer | None,
        session_id: str,
        keep_recent: int | None,
        tools: list[str] | None,
        dry_run: bool,
        durability: str | None,
    ) -> M.MicrocompactResult:
        host = await self.registry.host(session_id, user)
        mc = self.settings(session_id).microcompact
        return await microcompaction.clear_old_results(
            host,
            keep_recent if keep_recent is not None else mc.keep_recent,
            tools if tools is not None else mc.tools,
            self.estimator,
            dry_run,
            None if durability is None else Durability(durability),
        )

    async def snip(
        self,
        user: Peer | None,
        session_id: str,
        from_id: str,
        to_id: str,
        dry_run: bool,
        durability: str | None,
    ) -> M.SnipResult:
        host = await self.registry.host(session_id, user)
        mode = None if durability is None else Durability(durability)
        return await microcompaction.snip(host, from_id, to_id, dry_run, mode)


PolicySteps = Generator[list[dict[str, Any]], PendingAppend, None]
"""The after-append checks: they yield entry specs to write and are sent what was written."""


async def _commit(host: SessionHost, specs: list[dict[str, Any]]) -> PendingAppend:
    return await host.commit(lambda w: w.begin_append(specs))


def _resume(steps: PolicySteps, outcome: PendingAppend | Exception) -> list[dict[str, Any]] | None:
    """Hand the checks the outcome of their last write; the next edits to write, or None."""
    try:
        if isinstance(outcome, Exception):
            return steps.throw(outcome)
        return steps.send(outcome)
    except StopIteration:
        return None
