"""What the harness's processes share and send each other, with no torch: the report, the checker's request and
the replies, device peak figures.
"""
