"""Token usage and cost of every agent's sessions, kept incrementally (issue 27).

What each assistant response used (model, time, input / output / cache tokens, the agent's own
cost where it records one) is read from the session files of every root — sessiond's store,
Pi, Claude Code, Codex, OpenCode — once, into an SQLite file beside the store, and then only
what grew (:mod:`.index`). Reports group those records by day, week, month, session or model
(:mod:`.report`); prices and context windows come from the offline model registry
``genai-prices`` (:mod:`.registry`), overridable in the configuration. The counting rules of
each agent are written in ``docs/usage.md``.
"""
