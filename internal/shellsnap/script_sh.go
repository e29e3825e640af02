package shellsnap

// shCapture is the capture script of sh (dash). Go runs it as
// [shell, "-c", script, args...] and the script sources the login files
// itself, as dash -l would (/etc/profile, then ~/.profile), so that it knows
// the working directory and the limits before them; then $ENV by the
// reference's rule, unless the profile sourced it already. It prints the
// state as records (records.go): the traps and options first, while nothing
// of its own has changed them, then every variable (set), the exported and
// read-only ones, the aliases, the umask, the limits before and after the
// profile, the working directory, the positional parameters the profile set,
// whether it left $! set, every file sourced, and which names are functions.
// The records go to the capture's own stdout, kept on descriptors 8 and 9
// before the profile, whose stdout is /dev/null, as bashStdoutBack tells
// for bash: dash has no
// descriptor above 9, so a profile that takes one of them (`exec
// 9>~/.lock`) has no snapshot. @NONCE@ is the capture's token. The lines after the profile are parsed
// with its aliases: the regular builtins are called through command, which
// no function of the profile can stand for, and the special ones quoted.
//
// dash can neither say which files ran nor list its functions. Its aliases
// are expanded as a file is parsed, so the script makes "." an alias of
// __snapexec_dot, which notes the file ("." looks a name without a slash up
// in PATH) and sources it with ".", from a function: with the caller's $?
// and positional parameters, under the caller's errexit (dash numbers the
// lines of a file by the file, wherever its "." runs). What a function
// cannot give back is the file's own set -- or shift, which end with the
// function: the capture then fails (the command runs its login shell), and
// a break or continue for the caller's loop (FIDELITY.md). The script's own files are sourced with \.,
// which no alias replaces. A profile's \. or command . is not seen either:
// after the profile, __snapexec_unseen finds them in the files sourced
// (grep) and works out the names made of plain text and parameter
// expansions, with the variables as the profile left them, in a subshell;
// those files count as sourced (functions_sh.go names what it cannot work
// out). $ENV is not sourced when it is one of them: sh -lc never reads it.
// A profile that removes the alias (unalias -a) ends the watch: the files
// it sources after that are not seen, so $ENV is not sourced and the
// capture says so (an "unwatched" record).
//
// The functions are found by name: the candidates are the words before a
// "(" in the files sourced, and type says which are functions, in a
// subshell without aliases (an alias would hide a function of its name). Go
// reads their text from the files (functions_sh.go).
const shCapture = `__snapexec_ret() { return "$1"; }
__snapexec_quote() {
  __snapexec_s=$1 __snapexec_q=
  while :; do
    case $__snapexec_s in
    *\'*) __snapexec_q=$__snapexec_q${__snapexec_s%%\'*}"'\\''"; __snapexec_s=${__snapexec_s#*\'} ;;
    *) break ;;
    esac
  done
  __snapexec_q="'$__snapexec_q$__snapexec_s'"
}
__snapexec_note() {
  case $1 in /*) __snapexec_quote "$1" ;; *) __snapexec_quote "$PWD/$1" ;; esac
  __snapexec_srcs="$__snapexec_srcs $__snapexec_q"
}
__snapexec_args() {
  __snapexec_l=$#
  for __snapexec_x; do __snapexec_quote "$__snapexec_x"; __snapexec_l="$__snapexec_l $__snapexec_q"; done
}
__snapexec_find() {
  __snapexec_p=$1
  case $1 in */*) return 0 ;; esac
  __snapexec_r=${PATH-}:
  while [ -n "$__snapexec_r" ]; do
    __snapexec_p=${__snapexec_r%%:*}; __snapexec_r=${__snapexec_r#*:}
    __snapexec_p=${__snapexec_p:-.}/$1
    if [ -f "$__snapexec_p" ]; then return 0; fi
  done
  return 1
}
__snapexec_dot() {
  __snapexec_st=$1 __snapexec_c=$2
  shift 2
  __snapexec_file= __snapexec_a=
  if [ "$#" -gt "$__snapexec_c" ]; then eval "__snapexec_file=\${$((__snapexec_c + 1))}"; fi
  if [ "$__snapexec_file" = -- ] && [ "$#" -gt "$((__snapexec_c + 1))" ]; then eval "__snapexec_file=\${$((__snapexec_c + 2))}"; fi
  __snapexec_i=1
  while [ "$__snapexec_i" -le "$__snapexec_c" ]; do __snapexec_a="$__snapexec_a \"\${$__snapexec_i}\""; __snapexec_i=$((__snapexec_i + 1)); done
  eval "set -- $__snapexec_a"
  if [ -z "$__snapexec_file" ]; then
    if [ "$__snapexec_st" = 0 ]; then .; else __snapexec_ret "$__snapexec_st" || .; fi
    return
  fi
  if __snapexec_find "$__snapexec_file"; then __snapexec_note "$__snapexec_p"; fi
  __snapexec_args "$@"
  local __snapexec_was="$__snapexec_l" __snapexec_it="$__snapexec_file"
  if [ "$__snapexec_st" = 0 ]; then . "$__snapexec_file"; else __snapexec_ret "$__snapexec_st" || . "$__snapexec_file"; fi
  __snapexec_st=$?
  __snapexec_args "$@"
  if [ "$__snapexec_l" != "$__snapexec_was" ]; then
    command printf '%s\n' "snapexec: $__snapexec_it changed the positional parameters of the file that sourced it, which a capture cannot give back: no snapshot" >&2
    exit 125
  fi
  return "$__snapexec_st"
}
__snapexec_ran() {
  __snapexec_t=$1
  eval "set -- $2"
  for __snapexec_f; do if [ "$__snapexec_f" -ef "$__snapexec_t" ]; then return 0; fi; done
  return 1
}
__snapexec_files() { for __snapexec_f; do command printf '%s file\n%s\n' "$__snapexec_n" "$__snapexec_f"; done; }
__snapexec_dots() { command grep -h -o -E '(\\[.]|command[[:space:]]+[.])[[:space:]]+[^[:space:];&|)]+' -- "$@" 2>/dev/null; }
__snapexec_unseen() {
  set +e +u -f
  IFS='
'
  __snapexec_new= __snapexec_todo=$__snapexec_srcs
  while [ -n "$__snapexec_todo" ]; do
    __snapexec_words=$(eval "__snapexec_dots $__snapexec_todo")
    __snapexec_todo=
    for __snapexec_w in $__snapexec_words; do
      __snapexec_w=${__snapexec_w#*.}
      __snapexec_w=${__snapexec_w#"${__snapexec_w%%[![:space:]]*}"}
      case $__snapexec_w in ''|*[!A-Za-z0-9_/.~\"\$\{\}-]*) continue ;; esac
      command eval "__snapexec_w=$__snapexec_w" 2>/dev/null || continue
      if [ -n "$__snapexec_w" ] && __snapexec_find "$__snapexec_w" && [ -f "$__snapexec_p" ] && ! __snapexec_ran "$__snapexec_p" "$__snapexec_srcs"; then
        __snapexec_o=$__snapexec_srcs
        __snapexec_note "$__snapexec_p"
        __snapexec_todo=$__snapexec_todo${__snapexec_srcs#"$__snapexec_o"}
        __snapexec_new=$__snapexec_new${__snapexec_srcs#"$__snapexec_o"}
      fi
    done
  done
  command printf '%s' "$__snapexec_new"
}
__snapexec_scan() {
  set -f
  IFS='
'
  set -- $(command grep -o -h -E '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*[(]' -- "$@" 2>/dev/null | command grep -o -E '^[A-Za-z_][A-Za-z0-9_]*' | command sort -u)
  if [ "$#" -gt 0 ]; then command type "$@" 2>/dev/null | command grep -e ' is a shell function$'; fi
}
alias .='__snapexec_dot "$?" "$#" "$@"'
__snapexec_n=@NONCE@
__snapexec_srcs=
__snapexec_pwd=$PWD
__snapexec_argc=$#
__snapexec_argv=$*
__snapexec_limits=$(command ulimit -a; command printf -- '--\n'; command ulimit -H -a)
\exec 8>&1 9>&1 >/dev/null
` + shFdsBefore + `if [ -r /etc/profile ]; then __snapexec_note /etc/profile; \. /etc/profile; fi
if [ -r "${HOME:-}/.profile" ]; then __snapexec_note "${HOME:-}/.profile"; \. "${HOME:-}/.profile"; fi
__snapexec_watched=
case $(command alias . 2>/dev/null) in *__snapexec_dot*) __snapexec_watched=1 ;; esac
__snapexec_maybe=
if command -v grep >/dev/null 2>&1; then __snapexec_maybe=$(__snapexec_unseen); fi
if [ -n "$__snapexec_watched" ] && [ -n "${ENV:-}" ] && [ -r "$ENV" ] && ! __snapexec_ran "$ENV" "$__snapexec_srcs $__snapexec_maybe"; then __snapexec_note "$ENV"; \. "$ENV"; fi
if command test /dev/fd/8 -ef /dev/fd/9; then \exec >&8 8>&- 9>&-
else command printf '%s\n' "snapexec: the profile took over descriptor 8 or 9, where the capture kept its stdout: no snapshot" >&2; \exit 125; fi
__snapexec_bg=${!:-}
command printf '%s\n%s begin sh\n\n' '# Snapshot file' "$__snapexec_n"
command printf '%s traps\n' "$__snapexec_n"; \trap; command printf '\n'
command printf '%s setopts\n' "$__snapexec_n"; \set +o; command printf '\n'
\set +e +u +x +v
\trap - EXIT
command printf '%s vars\n' "$__snapexec_n"; \set; command printf '\n'
command printf '%s exports\n' "$__snapexec_n"; \export -p; command printf '\n'
command printf '%s readonly\n' "$__snapexec_n"; \readonly -p; command printf '\n'
command printf '%s aliases\n' "$__snapexec_n"; command alias; command printf '\n'
command printf '%s umask\n' "$__snapexec_n"; command umask; command printf '\n'
command printf '%s limits0\n%s\n' "$__snapexec_n" "$__snapexec_limits"
command printf '%s limits\n' "$__snapexec_n"; command ulimit -a; command printf -- '--\n'; command ulimit -H -a; command printf '\n'
if [ "$PWD" != "$__snapexec_pwd" ]; then command printf '%s cwd\n%s\n' "$__snapexec_n" "$PWD"; fi
if [ "$#" != "$__snapexec_argc" ] || [ "$*" != "$__snapexec_argv" ]; then
  command printf '%s args\n\n' "$__snapexec_n"
  for __snapexec_f in "$@"; do command printf '%s arg\n%s\n' "$__snapexec_n" "$__snapexec_f"; done
fi
if [ -n "$__snapexec_bg" ]; then command printf '%s background\n\n' "$__snapexec_n"; fi
command eval "__snapexec_files $__snapexec_srcs $__snapexec_maybe"
if [ -z "$__snapexec_watched" ]; then command printf '%s unwatched\n\n' "$__snapexec_n"; fi
if command -v grep >/dev/null 2>&1 && command -v sort >/dev/null 2>&1; then
  command printf '%s functions\n' "$__snapexec_n"; (command unalias -a; command eval "__snapexec_scan $__snapexec_srcs $__snapexec_maybe"); command printf '\n'
fi
` + shFdsRecord + `command printf '%s end\n\n\0' "$__snapexec_n"
/usr/bin/env -0
`
