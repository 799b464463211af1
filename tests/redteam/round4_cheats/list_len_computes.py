# Cheat (round four, class 1): run returns a list subclass that launches a token Triton kernel inside the
# window and computes the real answer with eager torch in __len__, which the old host called after the
# guard had returned (no op recorder, end event already recorded, profiler gone).
class Answer(list):
    def __init__(self, G):
        super().__init__()
        self.G = G

    def __len__(self):
        if not list.__len__(self):
            list.append(self, torch_muon(self.G))
        return list.__len__(self)


def run(G, steps):
    honest_run(G[:1].clone(), steps)  # a Triton launch in the window, sized to look busy
    return Answer(G)
