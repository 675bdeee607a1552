#!/usr/bin/env bash
# The patch series: lay out upstream sources, apply patches/, and edit the series in a git work tree.
#
#   tools/series.sh materialise [DIR]   git work tree of the upstream sources of the patched modules:
#                                       one base commit for the release, then one commit per patch
#                                       (default DIR: target/series-work)
#   tools/series.sh regenerate [DIR]    rewrite patches/ from the commits of DIR after its base commit; each
#                                       keeps the number patches/series gives it, a new one (at the end) gets the
#                                       next unused number: numbers are never reused
#   tools/series.sh roundtrip           materialise + regenerate into temporary folders; fails unless
#                                       the result is byte-identical to patches/
#   tools/series.sh export [--no-build] [OUT]   per patch, a PR-ready file (the patch plus the files its
#                                       Fork-PR-File trailers list: new files, or upstream's files of a module the
#                                       series does not patch, such as microbench, changed; one commit, fork-only
#                                       trailers stripped) that git am
#                                       applies onto the upstream sources, or onto them plus the patches its
#                                       Fork-Depends-On trailers name (a stacked PR) (default OUT: target/export).
#                                       Checked: each new file belongs to one PR, does not name the fork and imports
#                                       only packages its module has upstream (per upstream's pom); the PR applies;
#                                       and (unless --no-build) it builds there alone (patched modules, benchmarks)
#                                       and passes its own tests, with no file of another PR present; EXPORT_JOBS
#                                       (default 2) such builds at once, their reports in the series' order. Fails if
#                                       patches/ changes meanwhile
#   tools/series.sh pr-text NNNN        the PR text of patch NNNN: its commit message without fork-only trailers
#   tools/series.sh status NNNN STATUS  set patch NNNN's Upstream-Status trailer (Pending, Submitted [PR URL],
#                                       Accepted [version], Inappropriate [reason]) and regenerate the series
#   tools/series.sh retire NNNN         drop patch NNNN (merged upstream) from patches/ and patches/series, its
#                                       sections of the api-changes.txt files and the other patches'
#                                       Fork-Depends-On: NNNN; the others keep their numbers, a '# retired' line in
#                                       patches/series keeps its number from reuse; PATCHES.md's index regenerated
#   tools/series.sh index [--check]     write (or check) the generated table of PATCHES.md from the patches
#   tools/series.sh modules             the patched modules (folders with an api-changes.txt), one a line
#   tools/series.sh build-props         -D options with the build's versions and patched modules, for projects
#                                       outside the reactor (examples/*)
#   tools/series.sh record-version      after a change of patches/: a new fork version for it (revision
#                                       <base>-h2uring-<n+1> in pom.xml; a revision not committed yet is kept, so
#                                       it bumps once per commit) and the series' hash recorded with it
#   tools/series.sh check-version       (build) fails, saying how to bump, when patches/ is not the series that
#                                       revision was recorded with
#   tools/series.sh identity VERSION OUT   (build) the series' identity as a properties file for the patched jars:
#                                       version, series.sha256, patch.NNNN=subject
#   tools/series.sh rebase-check [--classes] VERSION   the series against another Netty release. From the class
#                                       jars of both releases (tools/rebase-classes.py): per patch, the classes it
#                                       touches that are unchanged, changed outside the methods it patches, or
#                                       changed in one of them (named). Then, unless --classes and only where the
#                                       release's -sources jars are served: per patch, whether it applies (git am)
#                                       and whether the patched modules then build (./mvnw package, nothing
#                                       installed). Prints tables
#   tools/series.sh newest-release      the newest release of the base's line (4.2.x) that Maven resolves
#   tools/series.sh build-sources MODULE_DIR SOURCES_JAR OUT   (build) the sources of the patched module in
#                                                    MODULE_DIR (its folder names it): unpack + apply, laid out
#                                                    as OUT/src/main/{java,c,resources}
#   tools/series.sh unpack MODULE SOURCES_JAR ROOT   lay out one module's sources under ROOT
#   tools/series.sh apply MODULE ROOT [PATCH_DIR]    apply the hunks of the series that touch
#                                                    MODULE to ROOT/MODULE, patch by patch
#
# The series: patches/series names the patch files in the order they apply (one a line, '#' comments); a patch
# file that is not listed, or a listed one that is missing, is an error. Each patch's commit message ends with
# trailers (git interpret-trailers): Upstream-Status (OpenEmbedded's values), Fork-Effect (one line for
# PATCHES.md), Fork-Doc (its long form under docs/), one Fork-PR-File per file the upstream PR adds (tests,
# benchmarks) or changes in a module the series does not patch (a benchmark of microbench) and, for a patch that builds on earlier ones of the series (a stacked PR), one Fork-Depends-On: NNNN
# per such patch. Upstream-Status and Fork-* trailers are fork-only: export and pr-text strip them.
#
# Versions: a fork version names one series. pom.xml records, next to revision (<base>-h2uring-<n>), the sha256 of
# patches/series followed by the patch files in its order (fork.seriesSha256); every patched module's build runs
# check-version, and record-version bumps n and records the hash. Released versions are never rebuilt with other
# bytes: Maven does not download a release again once it has it, and repositories refuse to overwrite one.
#
# Sources are laid out as in Netty's tree: MODULE/src/main/java for .java files, MODULE/src/main/c for
# native sources, MODULE/src/main/resources for the rest. Environment: NETTY_BASE_VERSION overrides the
# upstream release named in pom.xml (used by the rebase check); PATCH_DIR overrides patches/.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Folders of the modules the series may touch: those with an api-changes.txt (the marker that also switches on the
# parent pom's "patched-module" profile); each builds the artifact "netty-<folder>".
PATCHED_MODULES=$(cd "$TOP" && for f in */api-changes.txt; do [ -f "$f" ] && dirname "$f"; done | LC_ALL=C sort | tr '\n' ' ')
PATCH_DIR=${PATCH_DIR:-$TOP/patches}
# Trailers that only the fork reads; stripped from what goes upstream.
FORK_TRAILERS='^(Upstream-Status|Fork-[A-Za-z-]+):'
# Fixed identity and dates for the base commit so that the work tree is reproducible.
GIT_ID=(-c user.name="Netty fork series" -c user.email="series@fork.invalid" -c commit.gpgsign=false)
FORMAT_OPTS=(--zero-commit --no-signature --no-numbered --abbrev=12 --no-renames)

die() { echo "series: ERROR: $*" >&2; exit 1; }

# A property of the parent pom.
pom_property() { sed -n "s:.*<$1>\(.*\)</$1>.*:\1:p" "$TOP/pom.xml" | head -n 1; }

base_version() {
  if [ -n "${NETTY_BASE_VERSION:-}" ]; then echo "$NETTY_BASE_VERSION"; return; fi
  pom_property netty.base.version
}

# The patch files in the order of PATCH_DIR/series; every .patch file must be listed, every listed one present.
# The patch file names a series file lists, in order ('#' starts a comment; blanks do not count).
series_names() { sed 's/#.*//;s/[[:space:]]//g' "$1" | grep -v '^$' || true; }

patches() {
  local series=$PATCH_DIR/series name f
  [ -f "$series" ] || die "no $series (the patch files in the order they apply, one a line)"
  for name in $(series_names "$series"); do
    [ -f "$PATCH_DIR/$name" ] || die "$series lists $name, but there is no such file in $PATCH_DIR"
    echo "$PATCH_DIR/$name"
  done
  for f in "$PATCH_DIR"/*.patch; do
    [ -f "$f" ] || continue
    series_names "$series" | grep -qx "$(basename "$f")" \
      || die "$(basename "$f") is in $PATCH_DIR but not listed in $series; add it (in order) or delete it"
  done
}

# The patch file whose number is $1 (0001 or 1).
patch_file() {
  local n p
  n=$(printf '%04d' "$((10#${1:?patch number}))") || die "not a patch number: $1"
  for p in $(patches); do
    case "$(basename "$p")" in "$n"-*) echo "$p"; return ;; esac
  done
  die "no patch $n in $PATCH_DIR/series"
}

# Values of trailer $2 in patch file $1 (git interpret-trailers reads the message up to the patch's "---").
trailer() { git interpret-trailers --parse <"$1" | sed -n "s/^$2: //p"; }

# The commit message of a patch file (subject and body), as git am would record it.
message() {
  local tmp
  tmp=$(mktemp)
  git mailinfo "$tmp.msg" "$tmp.patch" <"$1" >"$tmp.info"
  sed -n 's/^Subject: //p' "$tmp.info"
  echo
  cat "$tmp.msg"
  rm -f "$tmp" "$tmp.msg" "$tmp.patch" "$tmp.info"
}

# A commit message without the fork-only trailers.
strip_fork_trailers() { grep -Ev "$FORK_TRAILERS" | git stripspace; }

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

cmd_build_sources() {
  local module out=$3 work
  module=$(basename "$(cd "$1" && pwd)")
  case " $PATCHED_MODULES " in *" $module "*) ;; *) die "$1 is not a patched module (no api-changes.txt)" ;; esac
  work=$out.work
  rm -rf "$out" "$work"
  mkdir -p "$work"
  cmd_unpack "$module" "$2" "$work"
  cmd_apply "$module" "$work"
  mv "$work/$module" "$out"
  rm -rf "$work"
}

# The upstream sources jar of a patched module, resolved by Maven (so from the local repository Maven is configured
# with: settings.xml, or -Dmaven.repo.local in MAVEN_ARGS): the copy the module's build made (MODULE/target/upstream),
# else one copied to target/upstream-sources.
sources_jar() {
  local artifact=netty-$1 version=$2 dir jar
  jar=$TOP/$1/target/upstream/$artifact-$version-sources.jar
  if [ -f "$jar" ]; then echo "$jar"; return; fi
  dir=$TOP/target/upstream-sources
  jar=$dir/$artifact-$version-sources.jar
  if [ ! -f "$jar" ]; then
    (cd "$TOP" && ./mvnw -q -B -N dependency:copy "-Dartifact=io.netty:$artifact:$version:jar:sources" \
      "-DoutputDirectory=$dir") >&2 || die "Maven cannot resolve io.netty:$artifact:$version:jar:sources"
    [ -f "$jar" ] || die "Maven did not copy io.netty:$artifact:$version:jar:sources to $jar"
  fi
  echo "$jar"
}

# Upstream's copy of Fork-PR-File $1 when it lies in a module the series does not patch (microbench, testsuite) and
# that module's sources jar (at the version this repository builds it against) has it: written to $2. Fails
# otherwise (a new file).
upstream_pr_file() {
  local f=$1 out=$2 m=${1%%/*} version path jar
  case "$m" in
    microbench) version=$(pom_property netty.microbench.version) ;;
    testsuite) version=$(pom_property netty.testsuite.version) ;;
    *) return 1 ;;
  esac
  path=${f#"$m"/src/main/java/}
  [ "$path" != "$f" ] || return 1
  jar=$(sources_jar "$m" "$version") || exit 1
  unzip -p "$jar" "$path" >"$out" 2>/dev/null
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
  local dir=${1:-$TOP/target/series-work} out=${2:-$PATCH_DIR} src names=() commits=() i n next f stage
  [ -d "$dir/.git" ] || die "$dir is not a work tree made by 'tools/series.sh materialise'"
  git -C "$dir" rev-parse -q --verify upstream-base >/dev/null || die "$dir has no upstream-base tag"
  [ -z "$(git -C "$dir" status --porcelain)" ] || die "$dir has uncommitted changes; commit them first"
  # A patch keeps its number for life: the commits after upstream-base take, in order, the numbers of the series
  # (OUT's, else patches/'s: a round trip writes into an empty folder); commits beyond those get numbers above every
  # number listed or retired ('# retired NNNN' lines, kept with the other comments), so none is used twice.
  src=$out/series
  [ -f "$src" ] || src=$PATCH_DIR/series
  mkdir -p "$out"
  stage=$(mktemp -d "$out/.regenerate.XXXXXX")
  : >"$stage/comments"
  if [ -f "$src" ]; then
    mapfile -t names < <(series_names "$src")
    grep '^#' "$src" >"$stage/comments" || true
  fi
  mapfile -t commits < <(git -C "$dir" rev-list --reverse upstream-base..HEAD)
  [ ${#commits[@]} -ge ${#names[@]} ] || { rm -rf "$stage"; die "$dir has ${#commits[@]} commit(s) after" \
    "upstream-base, $src lists ${#names[@]}: a patch leaves the series with 'tools/series.sh retire NNNN'"; }
  next=1
  for n in $(printf '%s\n' "${names[@]}" | cut -c1-4) \
      $(sed -n 's/^# retired \([0-9]\{4\}\).*/\1/p' "$stage/comments"); do
    [ $((10#$n)) -lt $next ] || next=$((10#$n + 1))
  done
  for i in "${!commits[@]}"; do
    if [ "$i" -lt ${#names[@]} ]; then n=$((10#${names[$i]:0:4})); else n=$next; next=$((next + 1)); fi
    f=$(git -C "$dir" format-patch "${FORMAT_OPTS[@]}" --start-number "$n" -o "$stage" -1 "${commits[$i]}") \
      || { rm -rf "$stage"; die "format-patch failed for commit ${commits[$i]}"; }
    f=$(basename "$f")
    if [ "$i" -lt ${#names[@]} ] && [ "${f#????-}" != "${names[$i]#????-}" ]; then
      echo "series: $f was ${names[$i]}: a new subject keeps the number; after a reorder, insertion or drop" \
        "the numbers follow positions, not patches (docs/maintaining.md)" >&2
    fi
    echo "$f"
  done >"$stage/names"
  # Only now is the old series replaced: a failure above leaves it as it was.
  find "$out" -maxdepth 1 -name '*.patch' -delete
  find "$stage" -maxdepth 1 -name '*.patch' -exec mv {} "$out/" \;
  cat "$stage/comments" "$stage/names" >"$out/series"
  rm -rf "$stage"
  echo "series: wrote $(grep -vc '^#' "$out/series") patch(es) and their order (series) to $out"
  if [ "$out" -ef "$TOP/patches" ] && [ "$PATCH_DIR" -ef "$out" ] \
      && [ "$(series_hash)" != "$(pom_property fork.seriesSha256)" ]; then
    echo "series: patches/ changed: 'tools/series.sh record-version' gives it a new fork version (the build checks)" >&2
  fi
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

# The class jar of a patched module, resolved by Maven as sources_jar does: the build's copy (MODULE/target/upstream),
# else one copied to target/upstream-jars. A release Maven cannot resolve stops here, named.
class_jar() {
  local artifact=netty-$1 version=$2 dir=$TOP/target/upstream-jars jar
  jar=$TOP/$1/target/upstream/$artifact-$version.jar
  if [ -f "$jar" ]; then echo "$jar"; return; fi
  jar=$dir/$artifact-$version.jar
  if [ ! -f "$jar" ]; then
    (cd "$TOP" && ./mvnw -q -B -N dependency:copy "-Dartifact=io.netty:$artifact:$version:jar" \
      "-DoutputDirectory=$dir") >&2 || die "Maven cannot resolve io.netty:$artifact:$version:jar (the class jar):" \
      "$version is not a Netty release, or the repositories Maven uses do not serve it"
    [ -f "$jar" ] || die "Maven did not copy io.netty:$artifact:$version:jar to $jar"
  fi
  echo "$jar"
}

# The newest release of the base's line (4.2.x for 4.2.18.Final) that Maven resolves: a version range of
# netty-codec-http2 in a throwaway pom under target/, so the repositories' metadata decides (-U: fetched again).
cmd_newest_release() {
  local base range dir=$TOP/target/newest-release v
  base=$(base_version)
  [[ $base =~ ^([0-9]+)\.([0-9]+)\. ]] || die "netty.base.version '$base' is not MAJOR.MINOR.PATCH[.QUALIFIER]"
  range="[$base,${BASH_REMATCH[1]}.$((BASH_REMATCH[2] + 1)).0.Alpha1)"
  mkdir -p "$dir"
  cat >"$dir/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.series</groupId>
  <artifactId>newest-release</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>io.netty</groupId>
      <artifactId>netty-codec-http2</artifactId>
      <version>$range</version>
      <type>pom</type>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
  </dependencies>
</project>
EOF
  rm -f "$dir/list.txt"
  (cd "$TOP" && ./mvnw -q -B -U -f "$dir/pom.xml" org.apache.maven.plugins:maven-dependency-plugin:3.8.1:list \
    -DoutputFile="$dir/list.txt" -DexcludeTransitive=true) >&2 \
    || die "Maven cannot resolve io.netty:netty-codec-http2:$range (Maven's error above)"
  v=$(sed -n 's/^ *io\.netty:netty-codec-http2:pom:\([^:]*\):.*/\1/p' "$dir/list.txt")
  [ -n "$v" ] || die "no version of io.netty:netty-codec-http2 in Maven's list ($dir/list.txt)"
  echo "$v"
}

cmd_rebase_check() {
  local classes_only= version base p name built m v jar
  [ "${1:-}" != --classes ] || { classes_only=1; shift; }
  version=${1:?usage: rebase-check [--classes] VERSION}
  [[ $version =~ ^[0-9A-Za-z][0-9A-Za-z._-]*$ ]] || die "not a release version: '$version' (Netty's: 4.2.21.Final)"
  base=$(base_version)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # From the class jars of both releases: what each patch's classes and methods became.
  mkdir "$tmp/jars"
  for m in $PATCHED_MODULES; do
    for v in "$base" "$version"; do
      jar=$(class_jar "$m" "$v") || exit 1
      ln -sf "$jar" "$tmp/jars/netty-$m-$v.jar"  # VERSION may be the base itself
    done
  done
  cmd_materialise "$tmp/base" >/dev/null
  python3 "$TOP/tools/rebase-classes.py" "$tmp/base" "$base" "$version" "$tmp/jars" $(patches) \
    || die "the class comparison failed (above)"
  [ -z "$classes_only" ] || return 0
  # From the sources, where the registry serves them: does each patch apply, and do the patched modules build.
  echo
  for m in $PATCHED_MODULES; do
    if ! (sources_jar "$m" "$version") >/dev/null 2>"$tmp/sources.log"; then
      echo "Sources of $version: io.netty:netty-$m:$version:jar:sources is not served, so the patches were not" \
        "applied; the table above is the check."
      return 0
    fi
  done
  mkdir -p "$tmp/series"
  : >"$tmp/series/series"
  echo "| patch | applies onto $version | patched modules build |"
  echo "|---|---|---|"
  NETTY_BASE_VERSION=$version PATCH_DIR="$tmp/series" cmd_materialise "$tmp/tree" >/dev/null
  for p in $(patches); do
    name=$(basename "$p")
    # Each patch on top of those that applied before it.
    if (cd "$tmp/tree" && git "${GIT_ID[@]}" am -q --keep-cr "$p" >/dev/null 2>&1); then
      cp "$p" "$tmp/series/"
      basename "$p" >>"$tmp/series/series"
      if (cd "$TOP" && PATCH_DIR="$tmp/series" ./mvnw -B -q -ntp package -Dmaven.test.skip=true -Djapicmp.skip \
          -Dnetty.base.version="$version" -pl "$(echo $PATCHED_MODULES | tr ' ' ',')" \
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

# Every Fork-PR-File with the patch that lists it, "FILE PATCHNAME" a line; a file listed by two patches, or listed
# for upstream while it names the fork, stops here with the file's name.
pr_files_checked() {
  local p name f line
  declare -A owner=()
  for p in $(patches); do
    name=$(basename "$p")
    for f in $(trailer "$p" Fork-PR-File); do
      [ -z "${owner[$f]:-}" ] || die "$f is a Fork-PR-File of both ${owner[$f]} and $name: a file goes to one PR;" \
        "keep it in one and let the other declare Fork-Depends-On"
      owner[$f]=$name
      [ -f "$TOP/$f" ] || die "$name lists $f (Fork-PR-File), but there is no such file"
      # The fork's own names (its version suffix, its test packages, its patch numbers and issues, its -Pupstream
      # profile, 'upstream's', the word itself) do not go upstream.
      line=$(grep -nE '\bfork\b|h2uring|testsuite\.fork|Fork-[A-Z]|\bpatch(es)? 0[0-9]{3}\b|\(0[0-9]{3}\)|\bissue [0-9]+|-Pupstream|\bupstream.s\b' \
        "$TOP/$f" | head -n 1) || true
      [ -z "$line" ] || die "$f (a file of $name's PR, bound for upstream) names the fork, line ${line%%:*}:" \
        "${line#*:}"
      echo "$f $name"
    done
  done
}

# The artifacts upstream's pom of module $1 depends on (its own <dependencies>, not those it manages or its plugins'),
# one a line; the pom is resolved by Maven (at the version this repository builds or runs that module against).
upstream_module_dependencies() {
  local m=$1 version dir=$TOP/target/upstream-poms
  case "$m" in
    microbench) version=$(pom_property netty.microbench.version) ;;
    testsuite) version=$(pom_property netty.testsuite.version) ;;
    *) version=$(base_version) ;;
  esac
  if [ ! -f "$dir/netty-$m-$version.pom" ]; then
    (cd "$TOP" && ./mvnw -q -B -N dependency:copy "-Dartifact=io.netty:netty-$m:$version:pom" \
      "-DoutputDirectory=$dir") >&2 || die "Maven cannot resolve io.netty:netty-$m:$version:pom"
  fi
  awk '/<dependencyManagement>/ { dm = 1 } /<\/dependencyManagement>/ { dm = 0 }
       /<plugin>/ { pl = 1 } /<\/plugin>/ { pl = 0 }
       /<dependency>/ { d = 1 } /<\/dependency>/ { d = 0 }
       d && !dm && !pl && /<artifactId>/ { sub(/.*<artifactId>/, ""); sub(/<\/artifactId>.*/, ""); print }' \
    "$dir/netty-$m-$version.pom"
}

# The artifacts (any one of them) that provide Netty package $1, where a module's dependencies decide whether a file
# compiles upstream; none for the packages every module has (common, buffer, transport, handler).
package_artifacts() {
  case "$1" in
    io.netty.channel.uring*) echo "netty-transport-classes-io_uring netty-transport-native-io_uring" ;;
    io.netty.channel.epoll*) echo "netty-transport-classes-epoll netty-transport-native-epoll" ;;
    io.netty.channel.kqueue*) echo "netty-transport-classes-kqueue netty-transport-native-kqueue" ;;
    io.netty.pkitesting*) echo "netty-pkitesting" ;;
    io.netty.handler.codec.http2*) echo "netty-codec-http2" ;;
    io.netty.handler.codec.http*) echo "netty-codec-http netty-codec-http2" ;;
    io.netty.testsuite*) echo "netty-testsuite" ;;
    io.netty.microbench*) echo "netty-microbench" ;;
  esac
}

# Every Fork-PR-File imports only packages its module has upstream: the module's own, or those of an artifact its
# upstream pom depends on (the build here uses this repository's poms, which may add dependencies a PR would have to
# add too).
pr_imports_checked() {
  local p name f m pkg deps needed a ok
  declare -A module_deps=()
  for p in $(patches); do
    name=$(basename "$p")
    for f in $(trailer "$p" Fork-PR-File); do
      m=${f%%/*}
      # Once per module: resolving and reading its pom is the slow part.
      [ -n "${module_deps[$m]+set}" ] || module_deps[$m]=$(upstream_module_dependencies "$m")
      deps=${module_deps[$m]}
      for pkg in $(grep -oE '^import (static )?io\.netty(\.[a-z0-9_]+)+' "$TOP/$f" | sed 's/^import //; s/^static //' \
          | sort -u); do
        needed=$(package_artifacts "$pkg")
        [ -n "$needed" ] || continue
        ok=
        for a in $needed; do
          if [ "$a" = "netty-$m" ] || grep -qx "$a" <<<"$deps"; then ok=1; fi
        done
        [ -n "$ok" ] || die "$f (a file of $name's PR) imports $pkg, but upstream's $m module does not depend on" \
          "$(echo $needed | sed 's/ / or /g'); make the file do without it, or leave it out of the PR"
      done
    done
  done
}

# Builds one PR as upstream would see it, in a copy of this repository: the modules it touches and those they depend
# on, from the upstream sources plus only the patch and the patches it declares (Fork-Depends-On), and, of the test
# and benchmark sources, only the files of those PRs (package-info.java files stay). Compiles the benchmarks and runs the PR's own tests
# (its Fork-PR-Files named *Test.java; a test under testsuite/src/main runs on NIO, as the testsuite module runs
# them); fails naming the PR and the log when a file does not compile or a test fails or does not run.
pr_build_check() {
  local p=$1 deps=$2 work=$3 name n f d keep=() tests=() t report modules
  name=$(basename "$p")
  n=${name%%-*}
  rm -rf "$work"
  mkdir -p "$work/repo" "$work/patches"
  (cd "$TOP" && git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) \
    | tar -xf - -C "$work/repo"
  : >"$work/patches/series"
  for d in $deps $n; do
    f=$(patches | grep "/$d-")
    cp "$f" "$work/patches/"
    basename "$f" >>"$work/patches/series"
    mapfile -t -O ${#keep[@]} keep < <(trailer "$f" Fork-PR-File)
  done
  for m in $PATCHED_MODULES microbench testsuite; do
    [ -d "$work/repo/$m/src" ] || continue
    (cd "$work/repo" && find "$m/src" -type f ! -name package-info.java) | while IFS= read -r f; do
      printf '%s\n' "${keep[@]}" | grep -qxF "$f" || rm "$work/repo/$f"
    done
  done
  for f in $(trailer "$p" Fork-PR-File); do
    case "$f" in
      */src/test/*Test.java|testsuite/src/main/*Test.java) t=$(basename "$f" .java); tests+=("$t") ;;
    esac
  done
  # The modules the patches and the PR files touch, and (-am) those they depend on: the others are upstream's.
  modules=$( { for d in $deps $n; do sed -n 's|^diff --git a/\([^/]*\)/.*|\1|p' "$(patches | grep "/$d-")"; done
    printf '%s\n' "${keep[@]%%/*}"; } | LC_ALL=C sort -u | tr '\n' ',')
  if ! (cd "$work/repo" && PATCH_DIR="$work/patches" ./mvnw -B -ntp verify -Djapicmp.skip \
      -pl "${modules%,}" -am \
      $( [ ${#tests[@]} -gt 0 ] && echo "-Dtest=$(IFS=,; echo "${tests[*]}") -Dsurefire.failIfNoSpecifiedTests=false" \
        || echo "-DskipTests") >"$work/build.log" 2>&1); then
    grep -E '\[ERROR\]' "$work/build.log" | head -n 15 >&2
    die "PR $name does not build or pass its tests on Netty $(base_version)${deps:+ + $deps} alone (errors above;" \
      "log: $work/build.log)"
  fi
  for t in "${tests[@]}"; do
    report=$(find "$work/repo" -path '*/target/surefire-reports*' -name "TEST-*.$t.xml" -o -path \
      '*/target/surefire-reports*' -name "TEST-*.$t\$*.xml" | head -n 1)
    [ -n "$report" ] || die "PR $name: its test $t did not run in the check (log: $work/build.log)"
  done
  echo "series: $name builds on Netty $(base_version)${deps:+ + $deps} alone and passes its ${#tests[@]} test" \
    "class(es): ${tests[*]:-none}"
}

# What patches/ holds now, as one digest.
patches_digest() { cat "$PATCH_DIR/series" $(patches) | sha256sum | cut -d' ' -f1; }

cmd_export() {
  local out build=yes p n files f name deps d dp work changed jobs=${EXPORT_JOBS:-2} before pids=() failed=
  [ "${1:-}" != --no-build ] || { build=; shift; }
  [[ $jobs =~ ^[1-9][0-9]*$ ]] || die "EXPORT_JOBS: '$jobs' is not a number >= 1"
  out=${1:-$TOP/target/export}
  before=$(patches_digest)
  tree=$(mktemp -d)
  trap 'rm -rf "$tree"' EXIT
  pr_files_checked >/dev/null
  pr_imports_checked
  cmd_materialise "$tree/tree" >/dev/null
  mkdir -p "$out"
  find "$out" -maxdepth 1 \( -name '*.patch' -o -name 'build-*.log' \) -delete
  for p in $(patches); do
    name=$(basename "$p")
    n=${name%%-*}
    files=$(trailer "$p" Fork-PR-File)
    [ -n "$files" ] || die "$name lists no new files of its PR (Fork-PR-File trailers)"
    deps=$(trailer "$p" Fork-Depends-On)
    (
      cd "$tree/tree"
      # The base of the PR: the upstream sources, plus the earlier patches it builds on.
      git checkout -q -B "base-$n" upstream-base
      for d in $deps; do
        dp=$(patches | grep "/$d-" || true)
        [ -n "$dp" ] && [ "$(basename "$dp")" \< "$name" ] \
          || die "$name: Fork-Depends-On: $d names no earlier patch of the series"
        git "${GIT_ID[@]}" am -q --keep-cr "$dp" \
          || die "patch $(basename "$dp") does not apply onto the upstream sources"
      done
      # A PR file that changes upstream's file of an unpatched module (a benchmark of microbench): upstream's copy
      # goes into the base, so that the PR changes it.
      changed=
      for f in $files; do
        if upstream_pr_file "$f" "$tree/upstream-file"; then
          mkdir -p "$(dirname "$f")"
          cp "$tree/upstream-file" "$f"
          git add "$f"
          git "${GIT_ID[@]}" commit -q -m "upstream's $f"
          changed="$changed $f"
        fi
      done
      git checkout -q -B "export-$n" "base-$n"
      git "${GIT_ID[@]}" am -q --keep-cr "$p" || die "patch $name does not apply onto the upstream sources${deps:+ + $deps}"
      for f in $files; do
        case " $changed " in
          *" $f "*) ;;
          *) [ ! -e "$f" ] || die "$f, listed for $name, exists upstream: a PR can not add it" ;;
        esac
        mkdir -p "$(dirname "$f")"
        cp "$TOP/$f" "$f"
        git add "$f"
      done
      git log -1 --format=%B | strip_fork_trailers >"$tree/msg"
      git "${GIT_ID[@]}" commit -q --amend -F "$tree/msg"
      git format-patch -q "${FORMAT_OPTS[@]}" --start-number "$((10#$n))" -o "$out" -1 HEAD
      # The check: the PR file applies onto the upstream sources (plus the patches it builds on) by itself.
      git checkout -q -B "check-$n" "base-$n"
      git "${GIT_ID[@]}" am -q --keep-cr "$out/$name" \
        || die "exported $name does not apply onto upstream${deps:+ + $deps}"
      [ -z "$deps" ] || echo "series: $name builds on $(echo $deps) (Fork-Depends-On): a stacked PR"
    )
    if [ -n "$build" ]; then
      # Each build in a copy of its own; at most $jobs at once, reported below in the series' order.
      while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
      pr_build_check "$p" "$deps" "$tree/build-$n" >"$tree/build-$n.out" 2>&1 &
      pids+=("$!:$n")
    fi
  done
  for p in "${pids[@]}"; do
    n=${p#*:}
    if ! wait "${p%%:*}"; then
      failed="$failed $n"
      # The build's folder goes with the temporary tree: keep its log.
      cp "$tree/build-$n/build.log" "$out/build-$n.log" 2>/dev/null || true
    fi
    cat "$tree/build-$n.out"
  done
  [ -z "$failed" ] || die "the PR build of$failed failed (above; logs: $out/build-NNNN.log)"
  [ "$(patches_digest)" = "$before" ] || die "patches/ changed while export ran: its result is of neither version"
  echo "series: exported $(patches | wc -l) PR file(s) to $out, each checked to apply onto Netty $(base_version)" \
    "(or onto it plus the patches it builds on)${build:+, to build there and to pass its own tests}"
}

cmd_pr_text() {
  local p
  p=$(patch_file "${1:?usage: pr-text NNNN}")
  message "$p" | strip_fork_trailers
}

# Rewrites the message of the commit of patch $2 (1-based) in work tree $1 with the command $3 (stdin -> stdout).
rewrite_message() {
  local dir=$1 n=$2 filter=$3
  (
    cd "$dir"
    FILTER_BRANCH_SQUELCH_WARNING=1 SERIES_N=$((10#$n)) SERIES_FILTER=$filter \
      git "${GIT_ID[@]}" filter-branch -f --msg-filter \
      'if [ "$(git rev-list --count upstream-base..$GIT_COMMIT)" = "$SERIES_N" ]; then
         eval "$SERIES_FILTER"; else cat; fi' upstream-base..HEAD >/dev/null 2>&1 \
      || die "could not rewrite the message of patch $n in $dir"
    git update-ref -d refs/original/refs/heads/"$(git symbolic-ref --short HEAD)" 2>/dev/null || true
  )
}

cmd_status() {
  local n=${1:?usage: status NNNN STATUS} status=${2:?usage: status NNNN STATUS} p
  case "$status" in
    Pending|"Submitted ["*"]"|"Accepted ["*"]"|"Inappropriate ["*"]"|Backport|Denied) ;;
    *) die "unknown Upstream-Status '$status': Pending, Submitted [PR URL], Accepted [version]," \
         "Inappropriate [reason], Backport or Denied (OpenEmbedded's values)" ;;
  esac
  p=$(patch_file "$n")
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cmd_materialise "$tmp/tree" >/dev/null
  export SERIES_STATUS=$status
  # Replaced where it stands (git interpret-trailers --if-exists replace would move it to the end).
  cat >"$tmp/filter" <<'EOF'
git interpret-trailers --if-exists doNothing --trailer "Upstream-Status: $SERIES_STATUS" |
  awk -v s="$SERIES_STATUS" '/^Upstream-Status: / { print "Upstream-Status: " s; next } { print }'
EOF
  rewrite_message "$tmp/tree" "$(basename "$p" | cut -c1-4)" "sh $tmp/filter"
  cmd_regenerate "$tmp/tree" >/dev/null
  cmd_index
  echo "series: $(basename "$p"): Upstream-Status: $status"
}

cmd_retire() {
  local n p name m f later
  p=$(patch_file "${1:?usage: retire NNNN}")
  name=$(basename "$p")
  n=${name%%-*}
  # A name of its own: the trap runs inside whichever function fails, and those have a local tmp.
  retire_tmp=$(mktemp -d)
  # Nothing is lost when a step fails (a patch that no longer applies without it): patches/, the api-changes.txt
  # files and PATCHES.md are put back.
  mkdir "$retire_tmp/backup" "$retire_tmp/backup-files" && cp -p "$PATCH_DIR"/series "$PATCH_DIR"/*.patch "$retire_tmp/backup/"
  (cd "$TOP" && cp -p --parents PATCHES.md $(for m in $PATCHED_MODULES; do echo "$m/api-changes.txt"; done) \
    "$retire_tmp/backup-files/")
  trap 'rc=$?; if [ $rc -ne 0 ]; then find "$PATCH_DIR" -maxdepth 1 -name "*.patch" -delete
    cp -p "$retire_tmp"/backup/* "$PATCH_DIR"/ && cp -pr "$retire_tmp"/backup-files/. "$TOP"/
    echo "series: retire stopped; patches/, PATCHES.md and the api-changes.txt files are as they were" >&2; fi
    rm -rf "$retire_tmp"' EXIT
  # Its line goes; a '# retired' line keeps its number from being used again (regenerate keeps comments first).
  { grep '^#' "$PATCH_DIR/series" || true; echo "# retired $name ($(base_version))"
    series_names "$PATCH_DIR/series" | grep -vxF "$name" || true; } >"$retire_tmp/series"
  mv "$retire_tmp/series" "$PATCH_DIR/series"
  mv "$p" "$retire_tmp/retired"
  # The others, applied onto the sources without it and written again under their own numbers. Upstream now has the
  # retired patch, so a later patch's "Fork-Depends-On: $n" goes.
  later=$(for f in $(patches); do
    trailer "$f" Fork-Depends-On | grep -qx "$n" && basename "$f" | cut -c1-4
  done || true)
  cmd_materialise "$retire_tmp/tree" >/dev/null
  if [ -n "$later" ]; then
    (cd "$retire_tmp/tree" && FILTER_BRANCH_SQUELCH_WARNING=1 git "${GIT_ID[@]}" filter-branch \
      --msg-filter "sed '/^Fork-Depends-On: $n\$/d'" upstream-base..HEAD >/dev/null)
  fi
  cmd_regenerate "$retire_tmp/tree" >/dev/null
  # api-changes.txt: drop the retired patch's section ("# NNNN ..." up to the next "# NNNN" line).
  for m in $PATCHED_MODULES; do
    f=$TOP/$m/api-changes.txt
    awk -v gone="$n" '/^# [0-9][0-9][0-9][0-9] / { skip = (substr($0, 3, 4) == gone) } !skip { print }' "$f" \
      >"$retire_tmp/api" && cat "$retire_tmp/api" >"$f"
  done
  cmd_index
  echo "series: retired $name; $(patches | wc -l) patch(es) left, under their own numbers." \
    "${later:+Fork-Depends-On: $n dropped from $(echo $later). }Its PR's files stay (upstream has them now;" \
    "git rm those that no other patch lists once the build does not need them):"
  trailer "$retire_tmp/retired" Fork-PR-File | sed 's/^/  /'
}

# The generated part of PATCHES.md: one row per patch.
index_table() {
  local p name n m mods api doc
  echo "| patch | upstream status | modules | API added | effect |"
  echo "|---|---|---|---|---|"
  for p in $(patches); do
    name=$(basename "$p")
    n=${name%%-*}
    mods=$(for m in $PATCHED_MODULES; do if touched "$p" | grep -q "^$m/"; then printf '`%s` ' "$m"; fi; done)
    api=$(for m in $PATCHED_MODULES; do
      awk -v n="$n" '/^# [0-9][0-9][0-9][0-9] / { on = (substr($0, 3, 4) == n); next } on && NF && !/^#/' \
        "$TOP/$m/api-changes.txt"; done | sed -E 's/^NEW //;s/([a-z0-9_]+\.)+([A-Z])/\2/g;s/.*/`&`/' | paste -sd ';' \
      | sed 's/;/; /g')
    doc=$(trailer "$p" Fork-Doc)
    echo "| [$n]($doc) $(message "$p" | head -n 1) ([patch](patches/$name)) | $(trailer "$p" Upstream-Status) |" \
      "${mods% } | ${api:-none} | $(trailer "$p" Fork-Effect) |"
  done
}

# PATCHES.md's index between its "<!-- index" and "<!-- /index -->" lines is index_table's output.
cmd_index() {
  local md=$TOP/PATCHES.md tmp
  grep -q '^<!-- index' "$md" && grep -q '^<!-- /index -->' "$md" || die "PATCHES.md has no <!-- index --> block"
  tmp=$(mktemp)
  index_table >"$tmp.table"
  awk -v table="$tmp.table" '
    /^<!-- index/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
    /^<!-- \/index -->/ { skip = 0 }
    !skip { print }' "$md" >"$tmp"
  if [ "${1:-}" = --check ]; then
    if ! diff -u "$md" "$tmp" >&2; then
      rm -f "$tmp" "$tmp.table"
      die "PATCHES.md's index is not the series' (run tools/series.sh index)"
    fi
    echo "series: PATCHES.md's index matches the series"
  else
    cat "$tmp" >"$md"
  fi
  rm -f "$tmp" "$tmp.table"
}

cmd_build_props() {
  echo "-Dfork.version=$(pom_property revision) -Dnetty.base.version=$(base_version)" \
    "-Djunit.version=$(pom_property junit.version)" \
    "-Dfork.patchedModules=$(echo $PATCHED_MODULES | tr ' ' ',')" \
    "-Dfork.seriesSha256=$(pom_property fork.seriesSha256)"
}

# The series' identity: sha256 of PATCH_DIR/series followed by the patch files in its order.
series_hash() {
  local p
  { cat "$PATCH_DIR/series"; for p in $(patches); do cat "$p"; done; } | sha256sum | cut -d ' ' -f 1
}

# The version after $1 (<base>-h2uring-<n>): <base>-h2uring-<n+1>.
next_version() {
  [[ $1 =~ ^(.+-h2uring-)([0-9]+)$ ]] || die "revision '$1' in pom.xml is not <base>-h2uring-<n>"
  echo "${BASH_REMATCH[1]}$((10#${BASH_REMATCH[2]} + 1))"
}

# The version a changed series gets: revision if it differs from the last commit's (bumped since, not released
# from a commit yet), else the next one. Outside a git work tree every change bumps.
new_version() {
  local current committed
  current=$(pom_property revision)
  committed=$(git -C "$TOP" show HEAD:./pom.xml 2>/dev/null | sed -n 's:.*<revision>\(.*\)</revision>.*:\1:p' \
    | head -n 1) || true
  if [ -n "$committed" ] && [ "$committed" != "$current" ]; then echo "$current"; else next_version "$current"; fi
}

cmd_check_version() {
  local recorded now
  if ! [ "$PATCH_DIR" -ef "$TOP/patches" ]; then
    echo "series: PATCH_DIR is $PATCH_DIR, not patches/: the fork version is not checked against it"
    return
  fi
  recorded=$(pom_property fork.seriesSha256)
  now=$(series_hash)
  if [ "$recorded" != "$now" ]; then
    die "patches/ is not the series that version $(pom_property revision) was recorded with (pom.xml:" \
      "fork.seriesSha256=${recorded:-none}, patches/ now: $now). A changed series needs a new version: run" \
      "tools/series.sh record-version (sets revision to $(new_version) and records the series in pom.xml)," \
      "then build again"
  fi
  echo "series: version $(pom_property revision) is the series of patches/ (sha256 $now)"
}

cmd_record_version() {
  local pom=$TOP/pom.xml old now version
  [ "$PATCH_DIR" -ef "$TOP/patches" ] || die "record-version records patches/, but PATCH_DIR is $PATCH_DIR"
  grep -q '<revision>[^<]*</revision>' "$pom" && grep -q '<fork.seriesSha256>[^<]*</fork.seriesSha256>' "$pom" \
    || die "$pom has no <revision> or no <fork.seriesSha256> property"
  old=$(pom_property revision)
  now=$(series_hash)
  if [ "$(pom_property fork.seriesSha256)" = "$now" ]; then
    echo "series: version $old is recorded with patches/ as it is (sha256 $now); nothing to do"
    return
  fi
  version=$(new_version)
  sed -i -e "0,/<revision>[^<]*<\/revision>/s//<revision>$version<\/revision>/" \
    -e "0,/<fork.seriesSha256>[^<]*<\/fork.seriesSha256>/s//<fork.seriesSha256>$now<\/fork.seriesSha256>/" "$pom"
  [ "$(pom_property revision)" = "$version" ] && [ "$(pom_property fork.seriesSha256)" = "$now" ] \
    || die "could not write revision and fork.seriesSha256 to $pom"
  if [ "$version" = "$old" ]; then
    echo "series: version $version (changed since the last commit: kept) recorded with patches/ (sha256 $now) in pom.xml"
  else
    echo "series: version $old -> $version, recorded with patches/ (sha256 $now) in pom.xml; commit it with patches/"
  fi
}

cmd_identity() {
  local version=$1 out=$2 p name subject
  mkdir -p "$(dirname "$out")"
  {
    echo "# The h2uring fork's patch series this jar was built with: Netty's sources + patches/, in this order."
    echo "version=$version"
    echo "series.sha256=$(series_hash)"
    for p in $(patches); do
      name=$(basename "$p")
      subject=$(message "$p" | sed -n 1p)
      ! LC_ALL=C grep -q '[^ -~]' <<<"$subject" || die "the subject of $name is not printable ASCII: $subject"
      echo "patch.${name%%-*}=${subject//\\/\\\\}"
    done
  } >"$out.tmp"
  mv "$out.tmp" "$out"
}

case "${1:-}" in
  unpack) shift; [ $# -eq 3 ] || die "usage: unpack MODULE SOURCES_JAR ROOT"; cmd_unpack "$@"; exit ;;
  modules) echo "$PATCHED_MODULES" | tr ' ' '\n' | sed '/^$/d'; exit ;;
  build-props) cmd_build_props; exit ;;
  newest-release) cmd_newest_release; exit ;;
esac
# Every other command reads the series: check it here (a check inside $(...) would not stop the script).
[ "${1:-}" = apply ] && [ $# -ge 4 ] && PATCH_DIR=$4
patches >/dev/null
case "${1:-}" in
  build-sources) shift; [ $# -eq 3 ] || die "usage: build-sources MODULE_DIR SOURCES_JAR OUT"; cmd_build_sources "$@" ;;
  apply) shift; [ $# -ge 2 ] || die "usage: apply MODULE ROOT [PATCH_DIR]"
    cmd_apply "$1" "$2" ;;
  materialise|materialize) shift; cmd_materialise "$@" ;;
  regenerate) shift; cmd_regenerate "$@" ;;
  roundtrip) cmd_roundtrip ;;
  export) shift; cmd_export "$@" ;;
  pr-text) shift; cmd_pr_text "$@" ;;
  status) shift; cmd_status "$@" ;;
  retire) shift; cmd_retire "$@" ;;
  index) shift; cmd_index "$@" ;;
  rebase-check) shift; cmd_rebase_check "$@" ;;
  record-version) cmd_record_version ;;
  check-version) cmd_check_version ;;
  identity) shift; [ $# -eq 2 ] || die "usage: identity VERSION OUT"; cmd_identity "$@" ;;
  *) die "usage: tools/series.sh materialise [DIR] | regenerate [DIR] | roundtrip | export [OUT] |" \
       "pr-text NNNN | status NNNN STATUS | retire NNNN | index [--check] | modules | build-props |" \
       "record-version | check-version | rebase-check [--classes] VERSION | newest-release | unpack ... |" \
       "apply ... | identity ..." ;;
esac
