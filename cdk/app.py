#!/usr/bin/env python3
"""CDK entry point: `cdk synth` runs `python3 cdk/app.py` from the repository root (cdk.json)."""

from aws_cdk import App

from pgarena_cdk.application import build, cdk_json_context

app = App(context=cdk_json_context())
build(app)
app.synth()
