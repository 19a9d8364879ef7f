from ms_fmk_transplt.cli import main

if __name__ == "__main__":
    main()
