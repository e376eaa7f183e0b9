#!/usr/bin/env bash
# Build the helm CLI that the chart tests run (helm lint, helm template on
# deploy/helm/flatavro) from its Go module, into $CACHE/bin/helm, once.
#   deploy/helm/build.sh        prints nothing when the cached helm is the pinned version
# CACHE: $FLATAVRO_HELM_CACHE or .cache/helm. `go install` builds it (~3 min on 2 cores and
# ~250 MB of modules into Go's cache the first time, one ~110 MB binary kept).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${FLATAVRO_HELM_CACHE:-$root/.cache/helm}
mkdir -p "$cache" && cache=$(cd "$cache" && pwd)  # absolute: go install wants GOBIN so
module=helm.sh/helm/v3/cmd/helm
version=v3.22.0

if [[ -x "$cache/bin/helm" && -f "$cache/.stamp" && "$(cat "$cache/.stamp")" == "$module@$version" ]]; then
    exit 0
fi
command -v go >/dev/null || {
    echo "deploy/helm/build.sh: go is not on PATH (needed once to build helm for the chart tests; https://go.dev/dl)" >&2
    exit 1
}
echo "building helm $version with go: ~250 MB of modules into Go's cache, ~3 min on 2 cores" \
    "the first time, one ~110 MB binary kept in $cache" >&2
started=$SECONDS
mkdir -p "$cache"
rm -rf "$cache/bin.tmp"
GOBIN="$cache/bin.tmp" go install "$module@$version"
rm -rf "$cache/bin"
mv "$cache/bin.tmp" "$cache/bin"
echo "$module@$version" > "$cache/.stamp"
echo "built helm in $((SECONDS - started)) s" >&2
