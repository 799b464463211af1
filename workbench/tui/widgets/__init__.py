"""Widgets of the session view and the task browser."""
