# Cheat (round four, class 1, the error path): an exception whose __repr__/__str__ (and an argument's
# __repr__) run eager torch when the host formats the error after the window; the text they return would
# reach the report.
class Payload:
    def __repr__(self):
        torch_muon(torch.randn(2, 8, 8))
        return "LEAKED-BY-REPR"


class Boom(RuntimeError):
    def __repr__(self):
        return "LEAKED-BY-REPR"

    def __str__(self):
        return "LEAKED-BY-STR"


def run(G, steps):
    honest_run(G, steps)
    raise Boom(Payload(), "plain text")
