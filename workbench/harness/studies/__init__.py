"""Studies of a task's tolerance and of its expert's configurations, driven by what the task declares in its
folder: `false_failure.toml` (the honest and wrong designs whose margins `bench false-failures` measures) and
`sweep.toml` (the expert's configurations `bench sweep` times). A new task adds data here, not a script."""
