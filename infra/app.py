"""`cdk synth` / `cdk deploy` entry point (infra/cdk.json): the app lives in relay_infra.app."""

from relay_infra.app import main

if __name__ == "__main__":
    main()
