# Cheat (round four, class 4, past the static policy and the guard's stream rule): the real work runs on a
# side stream and is still running when the window's end event fires on the main stream, where only a
# padding launch ran; the device-wide synchronisation after the window waits for it, outside the timed
# figure. The guard's launch hook is blinded first (what a solution past the policy could do), so only the
# device-side tail measurement (stream_tails.py) stands in the way.
import workbench.harness.solution.guard as _guard


def _count_only(self, metadata):
    self.count += 1
    self.names.append("_bmm_kernel")


_guard.LaunchCounter._on_launch = _count_only
_SIDE = torch.cuda.Stream()


def run(G, steps):
    _SIDE.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_SIDE):
        out = honest_run(G, steps)
    honest_run(G[:1].clone(), steps)  # the window's only work on the main stream
    return out
