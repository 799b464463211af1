# Appended by build() between the honest core and a cheat: the Muon iteration in plain torch math, for
# the cheats whose trick is to get torch math past the policy.
def torch_muon(G):
    X = G.float()
    X = (X / (X.norm(dim=(1, 2), keepdim=True) * 1.01 + 1e-7)).half()
    for a, b, c in COEFFS:
        A = X @ X.mT
        X = a * X + (b * A + c * A @ A) @ X
    return X
