#!/usr/bin/env bash
# make mutate: applies each one-line mutant of scripts/mutants.txt to a scratch copy of the
# tree (never to the tree itself), runs the test the mutant names, and reports it killed (the
# test failed, as it must) or SURVIVED. First it runs every named test once on the unchanged
# copy: a test that fails there proves nothing. Exits 1 when a mutant survives, a test fails
# unchanged, or a mutant's line is not in its file (the list is out of date).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
list=${MUTANTS:-$top/scripts/mutants.txt}
export PATH="$top/.tools/bin:$PATH" # promtool and prometheus, for tests that run them

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Mutants run in slots, one scratch copy of the tree each (MUTATE_JOBS, default the CPUs): a
# copy holds one mutant at a time. The tests build with -trimpath, so that what one copy built
# the others find in Go's build cache (without it a package's cache key holds its folder).
slots=${MUTATE_JOBS:-$(nproc)}
[[ $slots =~ ^[1-9][0-9]*$ ]] || { echo "mutate: MUTATE_JOBS=$slots: want a positive whole number" >&2; exit 1; }
copy="$work/tree"
mkdir "$copy"
# The files git knows of, committed or not (what a build sees), into the scratch copy; outside a
# git checkout (a source archive), the whole tree but the tools and build outputs.
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$top" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
  done | tar --null -T - -cf -) | tar -xf - -C "$copy"
else
  tar -C "$top" --exclude=./.tools --exclude=./.lab --exclude=./bin --exclude=./dist -cf - . | tar -xf - -C "$copy"
fi

names=() files=() lines=() withs=() tests=()
add() { names+=("$1"); files+=("$2"); lines+=("$3"); withs+=("$4"); tests+=("$5"); }
name='' file='' line='' with='' test=''
while IFS= read -r l || [ -n "$l" ]; do
  case "$l" in
    '#'* | '') continue ;;
    'mutant:'*)
      [ -n "$name" ] && add "$name" "$file" "$line" "$with" "$test"
      name=${l#mutant: } file='' line='' with='' test='' ;;
    'file: '*) file=${l#file: } ;;
    'line: '*) line=${l#line: } ;;
    'with:'*) with=${l#with:}; with=${with# } ;;
    'test: '*) test=${l#test: } ;;
    *) echo "mutate: $list: cannot read: $l" >&2; exit 1 ;;
  esac
done <"$list"
[ -n "$name" ] && add "$name" "$file" "$line" "$with" "$test"
# No more slots than mutants; each slot past the first gets its copy.
slots=$((slots < ${#names[@]} ? slots : ${#names[@]}))
for ((k = 1; k < slots; k++)); do cp -a "$copy" "$copy.$k"; done

# runs COPY PKG RUN OUT: the test in scratch copy COPY, its output into OUT; its status is the
# test's.
runs() { (cd "$1" && go test -trimpath -count=1 -run "^$(sed 's|/|$/^|' <<<"$3")\$" "$2" >"$4" 2>&1); }

# inslots N FN: runs FN I COPY for I = 0 .. N-1, slot k taking I = k, k+slots, ... in copy k.
inslots() {
  local k dir
  for ((k = 0; k < slots; k++)); do
    dir=$copy
    [ "$k" -gt 0 ] && dir="$copy.$k"
    (for ((i = k; i < $1; i += slots)); do "$2" "$i" "$dir"; done) &
  done
  wait
}

# base J COPY: runs the J-th named test (uniq) on the unchanged copy COPY; writes pass or FAIL
# to $work/base.J.
base() {
  local t=${uniq[$1]}
  if runs "$2" ${t% *} "${t#* }" "$work/bout.$1"; then
    echo "pass  $t" >"$work/base.$1"
  else
    { echo "FAIL  $t (fails unchanged)"; tail -20 "$work/bout.$1"; } >"$work/base.$1"
  fi
}

start=$SECONDS
fail=0
echo "== $(date -u +%FT%TZ) baseline: each named test on the unchanged tree"
declare -A seen
uniq=()
for t in "${tests[@]}"; do
  [ -n "${seen[$t]:-}" ] && continue
  seen[$t]=1
  uniq+=("$t")
done
inslots ${#uniq[@]} base
for j in "${!uniq[@]}"; do
  cat "$work/base.$j" 2>/dev/null || echo "FAIL  ${uniq[$j]} (did not finish)"
  grep -q '^pass' "$work/base.$j" 2>/dev/null || fail=1
done
[ "$fail" -eq 0 ] || { echo "mutate: baseline failing, no mutant run"; exit 1; }
echo "== baseline $((SECONDS - start))s; $slots slots"

# mutant I COPY: applies mutant I to scratch copy COPY, runs its test there and puts the copy
# back; writes its verdict to $work/res.I, whose first word is killed, SURVIVED, LOST (the list
# is out of date) or BROKEN.
mutant() {
  local i=$1 dir=$2 f="$2/${files[$1]}" orig="$work/orig.$1" out="$work/out.$1" t=${tests[$1]}
  if [ ! -f "$f" ]; then
    echo "LOST  ${names[$i]}: no file ${files[$i]} (update scripts/mutants.txt)" >"$work/res.$i"
    return
  fi
  cp "$f" "$orig"
  # The first line that reads LINE once its indentation is taken off becomes WITH, indented alike.
  if ! LINE=${lines[$i]} WITH=${withs[$i]} awk '
      !done { t = $0; sub(/^[ \t]+/, "", t)
              if (t == ENVIRON["LINE"]) { ind = substr($0, 1, length($0) - length(t)); done = 1
                                          if (ENVIRON["WITH"] != "") print ind ENVIRON["WITH"]; next } }
      { print }
      END { exit !done }' "$orig" >"$f"; then
    echo "LOST  ${names[$i]}: no line '${lines[$i]}' in ${files[$i]} (update scripts/mutants.txt)" >"$work/res.$i"
  elif runs "$dir" ${t% *} "${t#* }" "$out"; then
    echo "SURVIVED  ${names[$i]} (${files[$i]}; $t passed)" >"$work/res.$i"
  elif grep -q -e '\[build failed\]' -e '\[setup failed\]' "$out"; then
    # A mutant that does not build proves nothing about the test.
    { echo "BROKEN    ${names[$i]}: does not build"; tail -5 "$out"; } >"$work/res.$i"
  else
    echo "killed    ${names[$i]} ($t)" >"$work/res.$i"
  fi
  cp "$orig" "$f"
}

inslots ${#names[@]} mutant
survived=0
for i in "${!names[@]}"; do
  cat "$work/res.$i" 2>/dev/null || echo "mutate: mutant ${names[$i]} did not finish"
  case $(cut -d' ' -f1 "$work/res.$i" 2>/dev/null | head -1) in
    killed) ;;
    SURVIVED) survived=$((survived + 1)) ;;
    *) fail=1 ;;
  esac
done
echo "== ${#names[@]} mutants, $survived survived, $((SECONDS - start))s"
[ "$survived" -eq 0 ] && [ "$fail" -eq 0 ]
