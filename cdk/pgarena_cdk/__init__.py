"""The AWS CDK app that deploys pgarena."""
