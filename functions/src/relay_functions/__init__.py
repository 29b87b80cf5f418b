"""relay_functions: the Lambda functions of Kokoro Relay, thin handlers over plain functions."""
