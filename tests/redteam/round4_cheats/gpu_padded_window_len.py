# Cheat (round four, class 1 on a GPU): inside the window only a padding launch (the honest kernel on one
# matrix, sized to look busy); the real answer is computed with eager torch in __len__, which the old host
# called after the end event and the profiler had gone: the window, the launch record and the profile
# showed only the padding.
class Answer(list):
    def __init__(self, G):
        super().__init__()
        self.G = G

    def __len__(self):
        if not list.__len__(self):
            list.append(self, torch_muon(self.G))
        return list.__len__(self)


def run(G, steps):
    honest_run(G[:1].clone(), steps)
    return Answer(G)
