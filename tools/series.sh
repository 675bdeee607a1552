#!/usr/bin/env bash
# The patch series: lay out upstream sources, apply patches/, and edit the series in a git work tree.
#
#   tools/series.sh materialise [DIR]   git work tree of the upstream sources of the patched modules:
#                                       one base commit for the release, then one commit per patch
#                                       (default DIR: target/series-work)
#   tools/series.sh regenerate [DIR]    rewrite patches/ from the commits of DIR after its base commit
#   tools/series.sh roundtrip           materialise + regenerate into temporary folders; fails unless
#                                       the result is byte-identical to patches/
#   tools/series.sh export [OUT]        per patch, a PR-ready file (the patch plus the new tests and benchmarks
#                                       PATCHES.md lists for it, one commit) that git am applies onto the
#                                       upstream sources; checked here (default OUT: target/export)
#   tools/series.sh rebase-check VERSION  try the series on another Netty release: per patch, whether it applies
#                                       (git am) and whether the patched modules then build (./mvnw package,
#                                       nothing installed); prints a table
#   tools/series.sh unpack MODULE SOURCES_JAR ROOT   (build) lay out one module's sources under ROOT
#   tools/series.sh apply MODULE ROOT [PATCH_DIR]    (build) apply the hunks of the series that touch
#                                                    MODULE to ROOT/MODULE, patch by patch
#
# Sources are laid out as in Netty's tree: MODULE/src/main/java for .java files, MODULE/src/main/c for
# native sources, MODULE/src/main/resources for the rest. Environment: NETTY_BASE_VERSION overrides the
# upstream release named in pom.xml (used by the rebase check); PATCH_DIR overrides patches/.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Folders of the modules the series may touch; each builds the artifact "netty-<folder>".
PATCHED_MODULES="codec-http2 transport transport-classes-io_uring transport-native-io_uring"
PATCH_DIR=${PATCH_DIR:-$TOP/patches}
# Fixed identity and dates for the base commit so that the work tree is reproducible.
GIT_ID=(-c user.name="Netty fork series" -c user.email="series@fork.invalid" -c commit.gpgsign=false)
FORMAT_OPTS=(--zero-commit --no-signature --no-numbered --abbrev=12 --no-renames)

die() { echo "series: ERROR: $*" >&2; exit 1; }

base_version() {
  if [ -n "${NETTY_BASE_VERSION:-}" ]; then echo "$NETTY_BASE_VERSION"; return; fi
  sed -n 's:.*<netty.base.version>\(.*\)</netty.base.version>.*:\1:p' "$TOP/pom.xml" | head -n 1
}

patches() { find "$PATCH_DIR" -maxdepth 1 -name '*.patch' | LC_ALL=C sort; }

# Paths a patch touches (both sides of each "diff --git" line).
touched() { sed -n 's:^diff --git a/\(.*\) b/\(.*\)$:\1\n\2:p' "$1" | sort -u; }

# Every file the series touches must belong to a patched module; anything else would be lost silently.
check_modules() {
  local p f m ok
  for p in $(patches); do
    for f in $(touched "$p"); do
      ok=
      for m in $PATCHED_MODULES; do
        case "$f" in "$m"/*) ok=1 ;; esac
      done
      [ -n "$ok" ] || die "patch $(basename "$p") touches $f, which is outside the patched modules" \
        "($PATCHED_MODULES); add the module to the build or drop the hunk"
    done
  done
}

cmd_unpack() {
  local module=$1 jar=$2 root=$3 tmp f dest
  [ -f "$jar" ] || die "no sources jar at $jar"
  rm -rf "${root:?}/$module"
  tmp=$(mktemp -d)
  (cd "$tmp" && jar xf "$jar")
  rm -rf "$tmp/META-INF/maven" "$tmp/META-INF/MANIFEST.MF"
  (cd "$tmp" && find . -type f | sed 's:^\./::' | LC_ALL=C sort) | while IFS= read -r f; do
    case "$f" in
      module-info.yml) continue ;;  # moditect input of Netty's build, not a source
      *.java) dest=src/main/java ;;
      *.c|*.h) dest=src/main/c ;;
      *) dest=src/main/resources ;;
    esac
    mkdir -p "$root/$module/$dest/$(dirname "$f")"
    cp "$tmp/$f" "$root/$module/$dest/$f"
  done
  rm -rf "$tmp"
}

cmd_apply() {
  local module=$1 root=$2 p out n=0
  [ -d "$root/$module" ] || die "no upstream sources of $module under $root"
  check_modules
  for p in $(patches); do
    touched "$p" | grep -q "^$module/" || continue
    # GIT_CEILING_DIRECTORIES keeps git from treating the fork's own checkout as the target tree.
    if ! out=$(cd "$root" && GIT_CEILING_DIRECTORIES=$(dirname "$root") \
        git apply --include="$module/*" "$p" 2>&1); then
      echo "$out" >&2
      die "patch $(basename "$p") does not apply to upstream $module $(base_version):" \
        "$(echo "$out" | sed -n 's/^error: \(.*\): patch does not apply$/\1/p;s/^error: \(.*\): No such file.*/\1 (missing)/p' \
        | sort -u | tr '\n' ' ')"
    fi
    n=$((n + 1))
  done
  echo "series: $module: applied $n patch(es) from $PATCH_DIR"
}

# The upstream sources jar of a patched module, resolved by Maven (so from the local repository Maven is configured
# with: settings.xml, or -Dmaven.repo.local in MAVEN_ARGS) and copied to target/upstream-sources.
sources_jar() {
  local artifact=netty-$1 version=$2 dir jar
  dir=$TOP/target/upstream-sources
  jar=$dir/$artifact-$version-sources.jar
  if [ ! -f "$jar" ]; then
    (cd "$TOP" && ./mvnw -q -B -N dependency:copy "-Dartifact=io.netty:$artifact:$version:jar:sources" \
      "-DoutputDirectory=$dir") >&2 || die "Maven cannot resolve io.netty:$artifact:$version:jar:sources"
    [ -f "$jar" ] || die "Maven did not copy io.netty:$artifact:$version:jar:sources to $jar"
  fi
  echo "$jar"
}

cmd_materialise() {
  local dir=${1:-$TOP/target/series-work} version m
  version=$(base_version)
  [ ! -e "$dir" ] || [ -z "$(ls -A "$dir")" ] || die "$dir exists and is not empty; remove it first"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  check_modules
  for m in $PATCHED_MODULES; do
    cmd_unpack "$m" "$(sources_jar "$m" "$version")" "$dir"
  done
  (
    cd "$dir"
    git init -q
    git "${GIT_ID[@]}" add -A
    GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" \
      git "${GIT_ID[@]}" commit -q -m "Netty $version sources of the patched modules"
    git tag upstream-base
    mapfile -t series < <(patches)
    [ ${#series[@]} -gt 0 ] || exit 0
    if ! git "${GIT_ID[@]}" am -q --keep-cr "${series[@]}"; then
      n=$(cat .git/rebase-apply/next 2>/dev/null || echo 1)
      die "patch $(basename "${series[$((n - 1))]}") does not apply onto Netty $version (git's message above" \
        "names the file); resolve it in $dir and run 'git am --continue', or 'git am --abort'"
    fi
  )
  echo "series: $dir: upstream-base + $(patches | wc -l) patch(es); edit, commit, then: tools/series.sh regenerate $dir"
}

cmd_regenerate() {
  local dir=${1:-$TOP/target/series-work} out=${2:-$PATCH_DIR}
  [ -d "$dir/.git" ] || die "$dir is not a work tree made by 'tools/series.sh materialise'"
  git -C "$dir" rev-parse -q --verify upstream-base >/dev/null || die "$dir has no upstream-base tag"
  [ -z "$(git -C "$dir" status --porcelain)" ] || die "$dir has uncommitted changes; commit them first"
  mkdir -p "$out"
  find "$out" -maxdepth 1 -name '*.patch' -delete
  git -C "$dir" format-patch -q "${FORMAT_OPTS[@]}" -o "$out" upstream-base..HEAD
  echo "series: wrote $(find "$out" -maxdepth 1 -name '*.patch' | wc -l) patch(es) to $out"
}

cmd_roundtrip() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cmd_materialise "$tmp/tree" >/dev/null
  cmd_regenerate "$tmp/tree" "$tmp/patches" >/dev/null
  if ! diff -r -x '.*' "$PATCH_DIR" "$tmp/patches"; then
    die "round trip changed the series: regenerate it with tools/series.sh (materialise, regenerate)"
  fi
  echo "series: round trip of $(patches | wc -l) patch(es) is byte-identical"
}

cmd_rebase_check() {
  local version=${1:?usage: rebase-check VERSION} p name built
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/series"
  echo "| patch | applies onto $version | patched modules build |"
  echo "|---|---|---|"
  NETTY_BASE_VERSION=$version PATCH_DIR="$tmp/series" cmd_materialise "$tmp/tree" >/dev/null
  for p in $(patches); do
    name=$(basename "$p")
    # Each patch on top of those that applied before it.
    if (cd "$tmp/tree" && git "${GIT_ID[@]}" am -q --keep-cr "$p" >/dev/null 2>&1); then
      cp "$p" "$tmp/series/"
      if (cd "$TOP" && PATCH_DIR="$tmp/series" ./mvnw -B -q -ntp package -Dmaven.test.skip=true -Djapicmp.skip \
          -Dnetty.base.version="$version" -pl transport,codec-http2,transport-classes-io_uring,transport-native-io_uring \
          >"$tmp/build-$name.log" 2>&1); then
        built=yes
      else
        built="no: $(grep -m1 'ERROR' "$tmp/build-$name.log" | cut -c1-160)"
      fi
      echo "| $name | yes | $built |"
    else
      (cd "$tmp/tree" && git am --abort >/dev/null 2>&1 || true)
      echo "| $name | no | - |"
    fi
  done
}

# The files PATCHES.md lists for a patch: the lines of its "<!-- export NNNN" comment.
export_files() {
  sed -n "/^<!-- export $1:/,/^-->/p" "$TOP/PATCHES.md" | sed '1d;$d'
}

cmd_export() {
  local out=${1:-$TOP/target/export} p n files f name
  tree=$(mktemp -d)
  trap 'rm -rf "$tree"' EXIT
  cmd_materialise "$tree/tree" >/dev/null
  mkdir -p "$out"
  find "$out" -maxdepth 1 -name '*.patch' -delete
  for p in $(patches); do
    name=$(basename "$p")
    n=${name%%-*}
    files=$(export_files "$n")
    [ -n "$files" ] || die "PATCHES.md lists no export files for $name (an '<!-- export $n:' comment)"
    (
      cd "$tree/tree"
      git checkout -q -B "export-$n" upstream-base
      git "${GIT_ID[@]}" am -q --keep-cr "$p" || die "patch $name does not apply onto the upstream sources"
      for f in $files; do
        [ -f "$TOP/$f" ] || die "PATCHES.md lists $f for $name, but there is no such file"
        [ ! -e "$f" ] || die "$f, listed for $name, exists upstream: a PR can not add it"
        mkdir -p "$(dirname "$f")"
        cp "$TOP/$f" "$f"
        git add "$f"
      done
      git "${GIT_ID[@]}" commit -q --amend --no-edit
      git format-patch -q "${FORMAT_OPTS[@]}" --start-number "$((10#$n))" -o "$out" -1 HEAD
      # The check: the PR file applies onto the upstream sources by itself.
      git checkout -q -B "check-$n" upstream-base
      git "${GIT_ID[@]}" am -q --keep-cr "$out/$name" || die "exported $name does not apply onto upstream"
    )
  done
  echo "series: exported $(patches | wc -l) PR file(s) to $out, each checked to apply onto Netty $(base_version)"
}

case "${1:-}" in
  unpack) shift; [ $# -eq 3 ] || die "usage: unpack MODULE SOURCES_JAR ROOT"; cmd_unpack "$@" ;;
  apply) shift; [ $# -ge 2 ] || die "usage: apply MODULE ROOT [PATCH_DIR]"
    [ $# -lt 3 ] || PATCH_DIR=$3
    cmd_apply "$1" "$2" ;;
  materialise|materialize) shift; cmd_materialise "$@" ;;
  regenerate) shift; cmd_regenerate "$@" ;;
  roundtrip) cmd_roundtrip ;;
  export) shift; cmd_export "$@" ;;
  rebase-check) shift; cmd_rebase_check "$@" ;;
  *) die "usage: tools/series.sh materialise [DIR] | regenerate [DIR] | roundtrip | export [OUT] | unpack ... |" \
       "apply ..." ;;
esac
