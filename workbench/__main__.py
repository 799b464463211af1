from workbench.cli import main

main()
