package shellsnap

// bashCaptureProfile is the first part of bash's capture script, the
// profile; bashDump follows it. Go runs the whole (bashCapture) as
// [shell, "--noprofile", "-lc", script, args...]: a login shell (login_shell
// on, $0 and the positional parameters as the user's command would have them)
// that skips the profile, so that the script sources the profile itself, in
// bash's own order, while it watches which files run. The user's BASH_ENV
// comes in __SNAPEXEC_BASH_ENV, so that bash does not run it before the
// profile; the script puts it back first. @NONCE@ is replaced by a random
// token that starts every record (records.go).
//
// The functions the request's environment exported are noted as bash
// imported them (fn0 records; read without a process substitution, which
// would set $! before the profile runs), so that one the profile left as it was is
// left to each request's own environment. Before the profile runs, nothing
// but the request's exported functions can stand for a builtin; after it, the script names every builtin through
// "\command", which neither an alias nor a function of the profile can
// replace (a function named "command" still could). It records the options
// in BASHOPTS and SHELLOPTS, which reading takes no command, before the
// first command that could be an alias.
//
// A DEBUG trap with functrace on sees every command of every file the profile
// sources, at any depth, and notes the file each runs in (BASH_SOURCE); it
// also notes the commands that could change functrace, which it turns on
// itself, so that the user's own setting can be worked out afterwards. A
// RETURN trap notes $_ as each file ends, since the "." that sourced the
// profile sets $_ to the file's name (the script sets it back after each).
// Both traps keep $_ as they found it. A
// profile that sets a DEBUG or RETURN trap of its own ends that watch; the
// trap is then the user's and is captured like any other.
//
// The files are sourced with ".", never inside a loop or a function, so that
// a profile's return, break or declare acts as in a real login shell.
//
// The variables are printed by one declare -p, in a subshell that empties
// the exported ones first: their values are in the environment that follows,
// and a large one would count twice against MaxSnapshotBytes. POSIXLY_CORRECT
// keeps its value: the dump's set +o posix unsets it before the environment
// is printed. A nameref is
// left as it is: assigning it would assign the variable it names (an
// exported nameref is itself in the environment, its value the name).
//
// A function whose name holds "=" is printed by type, whose first line says
// what it is: declare -f takes such a name for an assignment.
//
// Per function, the state holds its text and its record's header only: the
// attributes are listed for the functions that have any, and the files the
// functions come from once each ("- 0 FILE"), so that a profile of many
// functions fits MaxSnapshotBytes nearly as it did in the reference's format.
const bashCaptureProfile = bashCaptureLogin + bashCaptureRC

// bashCaptureLogin is bashCaptureProfile up to the profile's end: the login
// sequence, watched.
const bashCaptureLogin = `if [[ -n ${__SNAPEXEC_BASH_ENV+x} ]]; then BASH_ENV=$__SNAPEXEC_BASH_ENV; \builtin export BASH_ENV; \builtin unset -v __SNAPEXEC_BASH_ENV; fi
\builtin exec {__snapexec_out}>&1 {__snapexec_out2}>&1
\command exec >/dev/null
` + bashFdsBefore + `__snapexec_n=@NONCE@
__snapexec_pwd=$PWD
__snapexec_args=("$@")
__snapexec_zero=$0
__snapexec_flags0=$-
__snapexec_fnfiles=1
\builtin declare -A __snapexec_fn0
\builtin mapfile -t __snapexec_fns <<<"$(\builtin compgen -A function)"
for __snapexec_f in "${__snapexec_fns[@]}"; do
  if [[ -n $__snapexec_f ]]; then __snapexec_fn0[$__snapexec_f]=$(\builtin declare -f -- "$__snapexec_f"); fi
done
__snapexec_limits=$(\builtin ulimit -S -a; \builtin printf -- '--\n'; \builtin ulimit -H -a)
__snapexec_src=
__snapexec_srcs=()
__snapexec_tcmds=()
__snapexec_last=
__snapexec_returned=
\builtin set -T
\builtin trap -- '[[ ${BASH_SOURCE[0]-} == "$__snapexec_src" ]] || { __snapexec_u=$_; __snapexec_src=${BASH_SOURCE[0]-}; if [[ -z $__snapexec_src || $__snapexec_src == /* ]]; then __snapexec_srcs+=("$__snapexec_src"); else __snapexec_srcs+=("$PWD/$__snapexec_src"); fi; \command : "$__snapexec_u"; }; case $BASH_COMMAND in *set*T*|*set*functrace*|*shopt*functrace*) __snapexec_u=$_; __snapexec_tcmds+=("$BASH_COMMAND"); \command : "$__snapexec_u" ;; esac' DEBUG
\builtin trap -- '__snapexec_last=$_; __snapexec_returned=1; \command : "$__snapexec_last"' RETURN
if [[ -e /etc/profile ]]; then . /etc/profile; \builtin : "$__snapexec_last"; fi
if [[ -e ~/.bash_profile ]]; then . ~/.bash_profile; elif [[ -e ~/.bash_login ]]; then . ~/.bash_login; elif [[ -e ~/.profile ]]; then . ~/.profile; fi
__snapexec_bg=${!-}
` + bashShoptsListed + `__snapexec_shopts=$BASHOPTS
\command shopt -u expand_aliases
`

// bashCaptureRC is the end of bashCaptureProfile: it sources ~/.bashrc by
// the reference's rule, when BASH_ENV is empty and the profile did not
// source it already. A login terminal's capture (bashTerminalCapture) has
// no such rule: an interactive login shell reads no ~/.bashrc of its own.
const bashCaptureRC = `__snapexec_rc=
if [[ -z ${BASH_ENV:-} && -r ~/.bashrc ]]; then
  __snapexec_rc=1
  for __snapexec_f in "${__snapexec_srcs[@]}"; do
    if [[ $__snapexec_f -ef ~/.bashrc ]]; then __snapexec_rc=; fi
  done
fi
if [[ -n $__snapexec_rc ]]; then
  if [[ :$__snapexec_shopts: == *:expand_aliases:* ]]; then \command shopt -s expand_aliases; fi
  \builtin : "$__snapexec_last"
  . ~/.bashrc
  ` + bashShoptsListed + `  __snapexec_shopts=$BASHOPTS
  \command shopt -u expand_aliases
fi
`

// bashShoptsListed brings BASHOPTS up to date in posix mode: turning it
// on sets the options it implies (expand_aliases, inherit_errexit, ...)
// without listing them there, where a shopt that changes nothing lists
// them.
const bashShoptsListed = `if [[ -o posix ]]; then if \command shopt -q extglob; then \command shopt -s extglob; else \command shopt -u extglob; fi; fi
`

// bashCapture is the whole capture: the profile, then the dump, written to
// the capture's own stdout (bashStdoutBack).
const bashCapture = bashCaptureProfile + bashStdoutBack + bashDump

// bashStdoutBack gives the dump the capture's own stdout, which
// bashCaptureLogin keeps on two descriptors of its own before the profile,
// whose stdout is /dev/null: a profile that sends its output elsewhere
// (`exec > >(tee -a ~/out.log)`, `exec >/dev/null`) would otherwise have
// the dump, the whole state with the environment, written there, and a job
// it leaves in the background, which prints on the profile's stdout, would
// have its output in the middle of the records (a line of it like a
// declare statement would be restored in every command). /dev/null is
// given through "\command exec": bash undoes the redirections of a
// "builtin exec" as it ends, but for those to a {name}. When the two no
// longer name one file, the profile took one of them over (`exec
// 10>~/out.log`): the capture then fails rather than write where the profile's descriptor goes, and
// the command runs its login shell. So it does when stdout is not the
// capture's after the exec: a function of the profile named command took
// the exec (the dump would run through it, into /dev/null, maybe until
// the capture's timeout).
const bashStdoutBack = `if [[ /dev/fd/$__snapexec_out -ef /dev/fd/$__snapexec_out2 ]]; then \command exec >&"$__snapexec_out"; fi
if [[ /dev/fd/1 -ef /dev/fd/$__snapexec_out && /dev/fd/$__snapexec_out -ef /dev/fd/$__snapexec_out2 ]]; then \command exec {__snapexec_out}>&- {__snapexec_out2}>&-
else \command printf '%s\n' "snapexec: the profile took over descriptor $__snapexec_out or $__snapexec_out2, where the capture kept its stdout, or the command builtin: no snapshot" >&2; \builtin exit 125; fi
`

// bashDump prints a bash state as records (records.go) and then, after a
// NUL, the environment: the part of the capture that runs after the
// profile. It expects expand_aliases off and these variables set:
// __snapexec_n (the nonce), __snapexec_pwd (the directory a cwd record is
// relative to), __snapexec_args and __snapexec_zero (the parameters the
// state's own are compared with), __snapexec_flags0 ($- before the watch),
// __snapexec_tcmds (the watched commands that could change functrace),
// __snapexec_limits (the limits a change is relative to), __snapexec_srcs
// (the files sourced), __snapexec_bg ($! of the profile), __snapexec_shopts
// (BASHOPTS with expand_aliases as the state had it), __snapexec_last and
// __snapexec_returned ($_ and whether it is known), __snapexec_fn0 (the
// request's exported functions; unset for none) and __snapexec_fnfiles
// (set: list the files the functions come from, which a snapshot's stamps
// need). It changes the shell's options and traps: it runs last. A session
// command's end has a dump of its own (bashSessionEnd), which shares the
// parts below.
const bashDump = bashDumpBody + bashDumpEnd

// bashDumpBody is bashDump but for its end (bashDumpEnd): the records.
const bashDumpBody = `__snapexec_so=$SHELLOPTS
\command set +T
__snapexec_dis=$(\command enable -n)
\command enable ` + bashDumpBuiltins + `
\command mapfile -t __snapexec_tl <<<"$(\command trap -p)"
\command trap - ` + bashDumpTraps + `
\command printf '%s\n%s begin bash\n\n' '# Snapshot file' "$__snapexec_n"
\command printf '%s traps\n' "$__snapexec_n"
for __snapexec_f in "${__snapexec_tl[@]}"; do if [[ -n $__snapexec_f ]]; then \command printf '%s\n' "$__snapexec_f"; fi; done
\command printf '\n'
\command unset -v __snapexec_tl
\command set ` + bashDumpOptionsOff + `
\command printf '%s disabled\n%s\n' "$__snapexec_n" "${__snapexec_dis:+$__snapexec_dis$'\n'}"
\command printf '%s vars\n' "$__snapexec_n"
(
  \command mapfile -t __snapexec_xs < <(\command compgen -A export)
  for __snapexec_f in "${__snapexec_xs[@]}"; do
    if [[ ! -R $__snapexec_f && ${!__snapexec_f@a} != *[aAr]* && $__snapexec_f != POSIXLY_CORRECT ]]; then \command printf -v "$__snapexec_f" ''; fi
  done
  \command unset -v __snapexec_u __snapexec_last __snapexec_xs __snapexec_keys0 BASH_EXECUTION_STRING
  \command declare -p
)
\command printf '\n'
\command set +o posix
if [[ -n ${__snapexec_tcmds[0]+x} ]]; then
  __snapexec_t=$(\command set +T; if [[ $__snapexec_flags0 == *T* ]]; then \command set -T; fi
    for __snapexec_c in "${__snapexec_tcmds[@]}"; do
      if [[ $__snapexec_c =~ ^[[:space:]]*((builtin|command)[[:space:]]+)?(set|shopt)([[:space:]]+[-+]?[[:alnum:]_]+)*[[:space:]]*$ ]]; then
        \command eval "\\builtin $__snapexec_c" >/dev/null 2>&1
      fi
    done
    if [[ $- == *T* ]]; then \command printf on; else \command printf off; fi)
elif [[ $__snapexec_flags0 == *T* ]]; then __snapexec_t=on
else __snapexec_t=unseen
fi
\command printf '%s setopts\n%s\n' "$__snapexec_n" "$__snapexec_so"
\command printf '%s functrace\n%s\n' "$__snapexec_n" "$__snapexec_t"
\command printf '%s setnames\n' "$__snapexec_n"; \command set -o; \command printf '\n'
\command printf '%s shopts\n%s\n' "$__snapexec_n" "$__snapexec_shopts"
\command printf '%s shoptnames\n' "$__snapexec_n"; \command shopt; \command printf '\n'
\command mapfile -t __snapexec_fns < <(\command compgen -A function)
` + bashFnRecords + `\command printf '%s fnattrs\n' "$__snapexec_n"
while IFS= \command read -r __snapexec_f; do
  if [[ $__snapexec_f != "declare -f "* ]]; then \command printf '%s\n' "$__snapexec_f"; fi
done < <(\command declare -F)
\command printf '\n'
for __snapexec_f in "${!BASH_ALIASES[@]}"; do
  \command printf '%s alias %q\n%s\n' "$__snapexec_n" "$__snapexec_f" "${BASH_ALIASES[$__snapexec_f]}"
done
\command printf '%s umask\n' "$__snapexec_n"; \command umask; \command printf '\n'
\command printf '%s limits0\n%s\n' "$__snapexec_n" "$__snapexec_limits"
\command printf '%s limits\n' "$__snapexec_n"; \command ulimit -S -a; \command printf -- '--\n'; \command ulimit -H -a; \command printf '\n'
if [[ $PWD != "$__snapexec_pwd" ]]; then \command printf '%s cwd\n%s\n' "$__snapexec_n" "$PWD"; fi
if [[ -n ${DIRSTACK[1]+x} ]]; then
  for __snapexec_f in "${DIRSTACK[@]}"; do \command printf '%s dir\n%s\n' "$__snapexec_n" "$__snapexec_f"; done
fi
__snapexec_same=
if [[ $# == "${#__snapexec_args[@]}" ]]; then
  __snapexec_same=1 __snapexec_i=0
  for __snapexec_f in "$@"; do
    if [[ $__snapexec_f != "${__snapexec_args[__snapexec_i]}" ]]; then __snapexec_same=; fi
    __snapexec_i=$((__snapexec_i + 1))
  done
fi
if [[ -z $__snapexec_same ]]; then
  \command printf '%s args\n\n' "$__snapexec_n"
  for __snapexec_f in "$@"; do \command printf '%s arg\n%s\n' "$__snapexec_n" "$__snapexec_f"; done
fi
if [[ $0 != "$__snapexec_zero" ]]; then \command printf '%s argv0\n%s\n' "$__snapexec_n" "$0"; fi
if [[ -n $__snapexec_bg ]]; then \command printf '%s background\n\n' "$__snapexec_n"; fi
if [[ -n $__snapexec_returned ]]; then \command printf '%s underscore\n%s\n' "$__snapexec_n" "$__snapexec_last"; fi
\command printf '%s complete\n' "$__snapexec_n"; \command complete -p; \command printf '\n'
\command printf '%s hash\n' "$__snapexec_n"; \command hash -l 2>/dev/null; \command printf '\n'
for __snapexec_f in "${__snapexec_srcs[@]}"; do
  if [[ -n $__snapexec_f ]]; then \command printf '%s file\n%s\n' "$__snapexec_n" "$__snapexec_f"; fi
done
if [[ -n ${__snapexec_fns[0]+x} && -n $__snapexec_fnfiles ]]; then
  \command shopt -s extdebug
  \command declare -A __snapexec_seen
  while IFS= \command read -r __snapexec_f; do
    __snapexec_f=${__snapexec_f#* }
    __snapexec_seen[${__snapexec_f#* }]=1
  done < <(\command declare -F -- "${__snapexec_fns[@]}")
  \command printf '%s fnfiles\n' "$__snapexec_n"
  for __snapexec_f in "${!__snapexec_seen[@]}"; do \command printf -- '- 0 %s\n' "$__snapexec_f"; done
  \command printf '\n'
fi
for __snapexec_f in "${!__snapexec_fn0[@]}"; do
  \command printf '%s fn0 %q\n%s\n' "$__snapexec_n" "$__snapexec_f" "${__snapexec_fn0[$__snapexec_f]}"
done
` + bashFdsRecord

// bashDumpEnd ends a dump: the end record, then the environment.
const bashDumpEnd = `\command printf '%s end\n\n\0' "$__snapexec_n"
\command /usr/bin/env -0
`

// bashTerminalCapture is the capture of a login terminal's state
// (docs/design/snapshots.md#login-terminals). Go runs it as [shell,
// "--noprofile", "-ilc", script] in a session of its own: an interactive
// login shell, which sources the profile as bashCapture does but no
// ~/.bashrc by the reference's rule (bashCaptureRC), since `bash -il` reads
// none of its own. Before the profile it lists readline's variables and
// bindings (bashKeysListing), as readline read them from the inputrc; after
// the dump, again: when the profile changed them, both listings are records
// (bindings0, bindings), from which Go makes the bind commands of the
// terminal's rc file (bashBindings). The dump writes to the capture's own
// stdout, as bashCapture's does (bashStdoutBack). Once env has printed the
// environment, it empties the history list and unsets HISTFILE, so that the
// capture's shell never writes the user's history file: an interactive bash writes
// it at its exit, and before an exec, whether history is on or not. Its
// EXIT trap is gone with the dump's, and a shell that reaches the end of
// its -c string reads no ~/.bash_logout.
const bashTerminalCapture = `__snapexec_keys0=$(` + bashKeysListing + `)
` + bashCaptureLogin + bashStdoutBack + bashDumpBody + `\command enable bind
__snapexec_keys=$(` + bashKeysListing + `)
if [[ $__snapexec_keys != "$__snapexec_keys0" ]]; then
  \command printf '%s bindings0\n%s\n' "$__snapexec_n" "$__snapexec_keys0"
  \command printf '%s bindings\n%s\n' "$__snapexec_n" "$__snapexec_keys"
fi
\command printf '%s end\n\n\0' "$__snapexec_n"
\command /usr/bin/env -0
\command history -c
\command set +o history
\command unset -v HISTFILE 2>/dev/null || \command :
`

// bashKeysListing lists readline's variables (bind -v) and, per keymap,
// its bindings to functions (-p), macros (-s) and shell commands (-X), each
// listing after a line "@@ KEYMAP KIND" ("@@ v" for the variables), which
// no line of bind's starts with.
const bashKeysListing = `{ \command printf '@@ v\n'; \command bind -v
  for __snapexec_m in ` + bashKeymaps + `; do
    \command printf '@@ %s p\n' "$__snapexec_m"; \command bind -m "$__snapexec_m" -p
    \command printf '@@ %s s\n' "$__snapexec_m"; \command bind -m "$__snapexec_m" -s
    \command printf '@@ %s x\n' "$__snapexec_m"; \command bind -m "$__snapexec_m" -X
  done; } 2>/dev/null`

// bashKeymaps are the keymaps a terminal's capture lists: emacs's (with
// its prefixes' maps) and vi's two.
const bashKeymaps = "emacs vi-insert vi-command"

// bashDumpTraps are the traps a dump clears once it has listed them: none
// may act on the dump, and the EXIT trap must not run it again.
const bashDumpTraps = "DEBUG RETURN ERR EXIT"

// bashDumpOptionsOff are the options a dump turns off (set's arguments):
// none may end it early or print its commands.
const bashDumpOptionsOff = "+o errexit +o nounset +o xtrace +o verbose +o onecmd"

// bashDumpBuiltins are the builtins a dump enables (enable's arguments)
// once it has listed those the state disabled, before it runs any of them:
// one run disabled would be run from PATH, and hashed in the state.
const bashDumpBuiltins = "printf declare set shopt trap compgen mapfile umask ulimit complete hash enable eval unset alias read type"

// bashFnRecords prints a record for each function __snapexec_fns names:
// its declare -f text, or, for a name that holds "=" (which declare -f
// takes for an assignment), type's, whose first line says what it is.
const bashFnRecords = `for __snapexec_f in "${__snapexec_fns[@]}"; do
  if [[ $__snapexec_f == *=* ]]; then
    \command printf '%s fntype %q\n' "$__snapexec_n" "$__snapexec_f"; \command type -- "$__snapexec_f"; \command printf '\n'
  else
    \command printf '%s fn %q\n' "$__snapexec_n" "$__snapexec_f"; \command declare -f -- "$__snapexec_f"; \command printf '\n'
  fi
done
`
