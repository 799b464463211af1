"""The footer of every workbench screen: Textual's Footer, rebuilt only when the keys it shows change.

Textual's Footer recomposes (a widget per key, each restyled: 20-150 ms on a busy screen) on every binding
change signal, and opening a screen sends several (the stack, the focus, the focus again after a refresh,
the screen's own refresh_bindings), on the new screen and on the one it covers: five rebuilds in a row
before the session view could paint its code. Here a signal schedules one rebuild after the next refresh
(signals meanwhile join it); the rebuild is skipped when the keys it would show (the screen's active
bindings as Footer.compose reads them) are those already shown, or while the screen cannot be seen (another
mode's, or one under an opaque screen): a screen that comes back signals a change (Textual counts its
`stack_updates` on resume), so its footer is brought up to date then. What is shown is exactly what
Textual's Footer would show.

A screen that reads its content in a worker can hold its footer (`held=True`) until that content is there
(`release()`): its keys are built once, when they are known, and the building does not compete with the
reading for the interpreter (the session view builds them with its content, the tasks area just after its
first paint).
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class WorkbenchFooter(Footer):
    """A Footer that rebuilds at most once per burst of binding changes, and only for a change it shows."""

    def __init__(self, held: bool = False) -> None:
        super().__init__()
        self._rebuild_pending = False
        self._shown: object = None  # what the keys were built from (None: never built)
        self._held = held  # nothing is built until release()

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or self._held:
            return
        if screen is self.screen:
            self._schedule()

    def release(self, after_refresh: bool = True) -> None:
        """Build the keys, after the next refresh (the content just set is drawn first) or at once (with it)."""
        if self._held:
            self._held = False
            # from the footer's own queue: the keys it makes are bound to it
            self.call_next(self._schedule if after_refresh else self._rebuild)

    def _schedule(self) -> None:
        if self.is_attached and not self._rebuild_pending:
            self._rebuild_pending = True
            self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False  # a change from here on schedules another rebuild
        if not self.is_attached or self.hidden:
            return
        keys = self.keys()
        if keys == self._shown:
            return
        self._shown = keys
        await self.recompose()

    @property
    def settled(self) -> bool:
        """No rebuild is pending and the keys shown are those the screen's bindings give now (or it is hidden)."""
        if not self.is_attached or self.hidden:
            return True
        return not self._held and not self._rebuild_pending and _visible(self._shown) == _visible(self.keys())

    def describe(self) -> str:
        """The keys shown and the keys due, for a failing test's message."""
        return f"held={self._held} pending={self._rebuild_pending} shown={_visible(self._shown)} due={_visible(self.keys())}"

    def keys(self) -> object:
        """Everything Footer.compose reads: the shown bindings (with their display, enabled state and tooltip),
        the command palette's key, and the footer's own settings."""
        app = self.app
        bindings = self.screen.active_bindings
        shown = tuple((b, app.get_key_display(b), enabled, tip) for _, b, enabled, tip in bindings.values() if b.show)
        palette = bindings.get(app.COMMAND_PALETTE_BINDING)
        palette_key = (palette[1], app.get_key_display(palette[1]), palette[2], palette[3]) if palette else None
        return (shown, palette_key, app.ENABLE_COMMAND_PALETTE, self.show_command_palette, self.combine_groups, self.compact)

    @property
    def hidden(self) -> bool:
        """Its screen is not drawn: it is not in the current mode's stack, or an opaque screen lies above it.
        (Textual's `Screen.is_current` counts the screen just below the top as drawn even then.)"""
        stack = self.app.screen_stack
        screen = self.screen
        if screen not in stack:
            return True
        return any(above.styles.background.a >= 1 for above in stack[stack.index(screen) + 1 :])


def _visible(keys: object) -> object:
    """What the keys look like on screen: each binding's key, label, enabled state and tooltip (two bindings
    of one key and label, a table's and its screen's, look the same)."""
    if not isinstance(keys, tuple) or not keys:
        return keys
    shown, *rest = keys
    return (tuple((b.key, display, b.description, enabled, tip) for b, display, enabled, tip in shown), *rest)
