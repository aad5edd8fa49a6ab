from streamlearn.cli import main

main()
