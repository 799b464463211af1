"""The built-in agent: a session Driver that works on a task through a model and workspace-confined tools.

`AgentDriver` (loop.py) is run by the session runner like any driver (`driver = "agent"` in session.toml);
the runner gets it from `agent_driver()`, handed in by whoever starts the runner (the CLI, a campaign
unit): the session package never imports this one. tools.py holds its tools, budget.py its turn and
dollar budget, design.py the design mode's proposal, profile.py the sandboxed profiler, testing.py a
scripted provider for tests. Imports the session package and `workbench.llm`.
"""

from workbench.agent.loop import AgentDriver, AgentOutcome, ProviderFactory, agent_driver, agent_outcome, default_provider

__all__ = ["AgentDriver", "AgentOutcome", "ProviderFactory", "agent_driver", "agent_outcome", "default_provider"]
