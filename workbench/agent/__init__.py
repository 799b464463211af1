"""The built-in agent: a session Driver that works on a task through a model and workspace-confined tools.

`AgentDriver` (loop.py) is run by the session runner like any driver (`driver = "agent"` in session.toml);
tools.py holds its tools, budget.py its turn and dollar budget, design.py the design mode's proposal,
profile.py the sandboxed profiler, testing.py a scripted provider for tests. Imports the session package
and `workbench.llm`; nothing below it imports this package except `session.runner.make_driver`, by name,
when it runs an agent session.
"""

from workbench.agent.loop import AgentDriver, AgentOutcome, agent_driver, agent_outcome, provider_for, set_provider_factory

__all__ = ["AgentDriver", "AgentOutcome", "agent_driver", "agent_outcome", "provider_for", "set_provider_factory"]
