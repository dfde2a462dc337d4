#!/usr/bin/env bash
# RESO's Web API Core 2.0 certification tests (RESOStandards/web-api-commander, RESO EULA; it is in no registry, so its
# source is kept here as commander-src.tar.xz, its Maven Central dependencies in commander-pom.xml).
#   commander.sh build                       builds into ${RESO_CMD_DIR:-~/.cache/estate-tools/reso-commander} (JDK 17, Maven)
#   commander.sh core URL TOKEN KEY [NAME=VALUE ...]
#                                            runs web-api-server.core.feature against a service root; NAME=VALUE
#                                            overrides RESOScript parameters. Last line: "commander_core passed=N failed=M skipped=K"
#   commander.sh metadata FILE.xml           the Data Dictionary 2.0 metadata checks on an EDMX file (OASIS CSDL XSDs,
#                                            Edm validity, then field by field when the DD workbook is present)
# Exit 0 when nothing failed (and, for core, something passed).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
dir=${RESO_CMD_DIR:-$HOME/.cache/estate-tools/reso-commander}
stamp=$(sha256sum "$here/commander-src.tar.xz" "$here/commander-pom.xml" "$0" | sha256sum | cut -c1-16)

# The source archive lacks RESO's Data Dictionary workbook (RESODataDictionary-2.0.xlsx), from which the tool lists
# the resources whose fields it looks up in the server's metadata: without it that list is empty and every step that
# reads a field's metadata fails. The patch lists the resources of the server's own metadata instead.
patch_field_map() {
  python3 - "$dir/src/main/java/org/reso/certification/containers/WebAPITestContainer.java" <<'PY'
import sys
path = sys.argv[1]
src = open(path).read()
old = "getDDCacheProcessor().getStandardFieldCache().keySet().forEach(resourceName -> {"
new = ("java.util.List<String> resourceNames = new java.util.ArrayList<>();"
       " try { resourceNames.addAll(getDDCacheProcessor().getStandardFieldCache().keySet()); } catch (Exception e) { LOG.warn(e); }"
       " if (resourceNames.isEmpty()) getEdm().getSchemas().forEach(s -> s.getEntityTypes().forEach(t -> resourceNames.add(t.getName())));"
       " resourceNames.forEach(resourceName -> {")
if old not in src:
    sys.exit("the field map code is not where the patch expects it")
open(path, "w").write(src.replace(old, new, 1))
PY
}

build() {
  [ -f "$dir/.built-$stamp" ] && return 0
  # One build at a time (test files run this in parallel workers); the others wait for it and use it.
  mkdir -p "$(dirname "$dir")"
  exec 9>"$dir.lock"
  flock -w 900 9 || { echo "another build of the commander holds $dir.lock" >&2; return 1; }
  [ -f "$dir/.built-$stamp" ] && { flock -u 9; return 0; }
  command -v java >/dev/null && command -v javac >/dev/null && command -v mvn >/dev/null || { echo "commander needs JDK 17 and Maven" >&2; return 1; }
  rm -rf "$dir"; mkdir -p "$dir" && tar -xJf "$here/commander-src.tar.xz" -C "$dir" || return 1
  cp "$here/commander-pom.xml" "$dir/pom.xml"
  patch_field_map || return 1
  ( cd "$dir" && mvn -q -B -f pom.xml dependency:copy-dependencies -DoutputDirectory="$dir/libs" >"$dir/maven.log" 2>&1 ) || { echo "maven dependencies failed: see $dir/maven.log" >&2; return 1; }
  ( cd "$dir" && javac -nowarn -encoding UTF-8 -d out -cp 'libs/*' $(find src/main/java -name '*.java') >"$dir/javac.log" 2>&1 && cp -r src/main/resources/* out/ ) || { echo "javac failed: see $dir/javac.log" >&2; return 1; }
  mkdir -p "$dir/build/certification/"{cucumberJson,reports,results}
  touch "$dir/.built-$stamp"
  flock -u 9
}

# Each run in a folder of its own (the tool writes its reports and logs relative to where it runs), so runs at the
# same time never touch each other's files; the build is shared and only read.
run_dir() {
  local r
  r=$(mktemp -d "${TMPDIR:-/tmp}/reso-commander-run.XXXXXX") || return 1
  ln -s "$dir/src" "$r/src"
  mkdir -p "$r/build/certification/"{cucumberJson,reports,results}
  echo "$r"
}

summary() { # cucumber's "N Scenarios (x failed, y skipped, z passed)" line
  local s p f k
  s=$(grep -E '^[0-9]+ Scenarios? \(' "$1" | tail -1)
  p=$(echo "$s" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+'); f=$(echo "$s" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+'); k=$(echo "$s" | grep -oE '[0-9]+ skipped' | grep -oE '[0-9]+')
  grep -E '^Scenario:|AssertionError' "$1" | grep -B1 AssertionError | head -20 | cut -c1-220
  [ -n "$s" ] || { f=1; echo "(the tool stopped before its summary: see $1)"; }
  echo "commander_${2} passed=${p:-0} failed=${f:-0} skipped=${k:-0}"
  [ "${f:-0}" -eq 0 ] && { [ "${p:-0}" -gt 0 ] || [ "$2" = metadata ]; }
}

case "${1:-}" in
  build) build && echo "built in $dir" ;;
  core)
    build || exit 2
    url=$2; token=$3; key=$4; shift 4
    run=$(run_dir) || exit 2
    script="$run/run.resoscript"
    sed -e "s#<WebAPIURI>[^<]*</WebAPIURI>#<WebAPIURI>${url}</WebAPIURI>#" -e "s#<BearerToken>[^<]*</BearerToken>#<BearerToken>${token}</BearerToken>#" \
        -e "s#Name=\"KeyValue\" Value=\"[^\"]*\"#Name=\"KeyValue\" Value=\"'${key}'\"#" "$here/core.resoscript.template" > "$script"
    for kv in "$@"; do n=${kv%%=*}; v=${kv#*=}; sed -i "s#Name=\"${n}\" Value=\"[^\"]*\"#Name=\"${n}\" Value=\"${v}\"#" "$script"; done
    log="$run/core.log"
    ( cd "$run" && timeout 900 java -Dversion=2.0.0 -DpathToRESOScript="$script" -cp "$dir/out:$dir/libs/*" io.cucumber.core.cli.Main --plugin pretty --plugin summary --monochrome \
        --glue 'org.reso.certification.stepdefs#WebAPIServerCore' src/main/java/org/reso/certification/features/web-api/v2.0.0/web-api-server.core.feature ) >"$log" 2>&1
    summary "$log" core; code=$?
    [ "$code" -eq 0 ] && rm -rf "$run" # a failed run's folder stays, for its log
    exit "$code" ;;
  metadata)
    build || exit 2
    run=$(run_dir) || exit 2
    log="$run/metadata.log"; file=$(realpath "$2")
    ( cd "$run" && timeout 900 java -Dversion=2.0 -Dstrict=true -DpathToMetadata="$file" -cp "$dir/out:$dir/libs/*" io.cucumber.core.cli.Main --plugin summary --monochrome \
        --glue 'org.reso.certification.stepdefs#DataDictionary' src/main/java/org/reso/certification/features/data-dictionary/v2.0 ) >"$log" 2>&1
    grep -q 'XML Metadata is valid!' "$log" && grep -q 'Edm Metadata is valid!' "$log" || { echo "the metadata is not valid CSDL/EDM: see $log"; echo "commander_metadata passed=0 failed=1 skipped=0"; exit 1; }
    summary "$log" metadata; code=$?
    [ "$code" -eq 0 ] && rm -rf "$run"
    exit "$code" ;;
  *) sed -n 2,10p "$0"; exit 2 ;;
esac
