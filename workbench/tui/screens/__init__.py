"""Screens of the workbench, one per area: tasks, sessions, session view, launch dialog, help."""
