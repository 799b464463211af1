# Cheat: run a shell from the solution (here: leave a mark outside the scratch folder).
from os import system

system("touch /tmp/d2k-redteam-os-system-was-here")


def run(G, steps):
    return honest_run(G, steps)
