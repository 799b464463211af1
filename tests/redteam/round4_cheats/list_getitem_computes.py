# Cheat (round four, class 1): a list subclass whose __getitem__ computes the answer on the host's read.
class Answer(list):
    def __init__(self, G):
        super().__init__([G])
        self.G = G

    def __getitem__(self, index):
        return torch_muon(self.G)


def run(G, steps):
    honest_run(G[:1].clone(), steps)
    return Answer(G)
