package shellsnap

// zsh reads its startup files from ZDOTDIR; a capture runs zsh -lc with
// ZDOTDIR naming a directory of the server's whose .zshenv is zshCaptureEnv,
// and a replay with ZDOTDIR naming the snapshot's restore directory (a
// .zshenv and a .zlogin, restore_zsh.go). Either way zsh itself runs the
// login sequence and then the -c string, as for the user's own command, so
// that errors say "zsh:1:", zsh_eval_context is "toplevel" and the last
// program runs in the shell's place. The request's ZDOTDIR, if any, travels in
// __SNAPEXEC_ZDOTDIR.

// zshCaptureEnv is the .zshenv of a capture: it gives ZDOTDIR back, so that
// zsh finds the user's .zprofile and .zlogin where the user's own .zshenv
// leaves ZDOTDIR, notes where the shell started (its limits in a subshell,
// where loading zsh/rlimits for ulimit leaves the shell's modules alone),
// lists zle's keymaps and widgets in an interactive shell (a login
// terminal's capture: zshTerminalCapture), keeps its stdout on two
// descriptors of its own (zshStdoutBack) and gives the startup files
// /dev/null instead, sets a DEBUG trap that
// notes every file the startup sources (%x, at any depth), and sources the
// user's .zshenv. zsh runs every other startup file itself.
const zshCaptureEnv = `if (( ${+__SNAPEXEC_ZDOTDIR} )); then ZDOTDIR=$__SNAPEXEC_ZDOTDIR; else \builtin unset ZDOTDIR; fi
\builtin unset __SNAPEXEC_ZDOTDIR
__snapexec_pwd=$PWD
__snapexec_args=("$@")
__snapexec_limits=$(\builtin ulimit -S -a; \builtin print -r -- --; \builtin ulimit -H -a)
__snapexec_src=
__snapexec_srcs=()
if [[ -o interactive ]]; then __snapexec_keys0=$(` + zshKeysListing + `); fi
\exec {__snapexec_out}>&1 {__snapexec_out2}>&1 >/dev/null
` + zshFdsBefore + `\builtin trap '[[ ${(%):-%x} == "$__snapexec_src" ]] || { __snapexec_src=${(%):-%x}; __snapexec_srcs+=("$__snapexec_src"); }' DEBUG
if [[ -e ${ZDOTDIR:-$HOME}/.zshenv ]]; then \builtin source ${ZDOTDIR:-$HOME}/.zshenv; fi
`

// zshCaptureProfile is the first part of the -c string of a zsh capture,
// which runs after the login sequence: it sources ~/.zshrc by the
// reference's rule, when no startup file did. zshDump follows it. It lists
// the loaded modules first, before the dump's use of zsh/parameter's arrays
// loads that module. @NONCE@ is the capture's token.
const zshCaptureProfile = zshCaptureStart + zshCaptureRC

// zshCaptureStart is the start of every capture's -c string: $_, the
// modules, the nonce.
const zshCaptureStart = `__snapexec_u=$_
__snapexec_mods=$(\builtin zmodload -L)
__snapexec_n=@NONCE@
`

// zshCaptureRC sources ~/.zshrc by the reference's rule. A login
// terminal's capture has no such rule: its interactive shell reads .zshrc
// itself, or not, as the user's own would.
const zshCaptureRC = `__snapexec_rc=${ZDOTDIR:-$HOME}/.zshrc
if [[ -r $__snapexec_rc ]]; then
  __snapexec_seen=
  for __snapexec_f in "${__snapexec_srcs[@]}"; do
    if [[ $__snapexec_f -ef $__snapexec_rc ]]; then __snapexec_seen=1; fi
  done
  if [[ -z $__snapexec_seen ]]; then \builtin source $__snapexec_rc; fi
fi
`

// zshCapture is the whole -c string of a zsh capture: the profile, then the
// dump, written to the capture's own stdout (zshStdoutBack), then the end
// that leaves nothing to run at the shell's exit (zshCaptureEnd).
const zshCapture = zshCaptureProfile + zshStdoutBack + zshDump + zshCaptureEnd

// zshStdoutBack gives the dump the capture's own stdout, which
// zshCaptureEnv keeps on two descriptors before the startup files, whose
// stdout is /dev/null: one that sends its output elsewhere (`exec >
// >(tee -a ~/out.log)`, `exec >/dev/null`) would otherwise have the dump,
// the whole state with the environment, written there, and a job one
// leaves in the background would have what it prints in the middle of the
// records, as bashStdoutBack tells. When the two no longer name one file, a
// startup file closed or took over one of them: the capture then fails
// rather than write where the startup file's descriptor goes, and the
// command runs its login shell. The exec is parsed under zsh's own
// options (emulate zsh -c): the -c string is parsed under those the
// startup files left, and after an emulate sh there "{name}>&-" is a
// command's name, not a redirection.
const zshStdoutBack = zshDumpEnable + `if [[ /dev/fd/$__snapexec_out -ef /dev/fd/$__snapexec_out2 ]]; then \builtin emulate zsh -c '\exec >&$__snapexec_out {__snapexec_out}>&- {__snapexec_out2}>&-'
else \builtin print -ru2 -- "snapexec: a startup file took over descriptor $__snapexec_out or $__snapexec_out2, where the capture kept its stdout: no snapshot"; \builtin exit 125; fi
`

// zshDump prints a zsh state as records (records.go) and then, after a NUL,
// the environment: the part of the capture that runs after the profile, and
// the one a session command runs at its end (session_zsh.go). It reads every
// option's state under the state's own options (names from an anonymous
// function under emulate -L zsh, since a profile's emulate sh hides
// $options' flags); prints the emulation and the traps, and removes the
// traps, before it reads the options (a DEBUG trap would run for each of
// some 180); then resets the options to zsh's (emulate -R zsh) and prints
// the rest. Options that zsh
// refuses to change after start-up are left out (zshFixedOptions). The
// functions that stand for the DEBUG, EXIT and ZERR traps are printed
// before the dump removes those traps, which removes them. It
// expects these variables set: __snapexec_n (the nonce), __snapexec_u ($_
// as the state has it), __snapexec_mods (zmodload -L before the dump),
// __snapexec_pwd (the directory a cwd record is relative to),
// __snapexec_args (the parameters the state's own are compared with),
// __snapexec_limits (the limits a change is relative to) and
// __snapexec_srcs (the files sourced). It changes the shell's options and
// traps: it runs last.
const zshDump = zshDumpBody + zshDumpEnd

// zshDumpBody is zshDump but for its end (zshDumpEnd): the records. The
// listing of zle's keymaps before the profile (__snapexec_keys0) is no
// variable of the state.
const zshDumpBody = zshDumpEnable + `() { \builtin emulate -L zsh; __snapexec_on=(${(k)options}) }
\builtin print -rl -- '# Snapshot file' "$__snapexec_n begin zsh" '' "$__snapexec_n emulation"
\builtin emulate
\builtin print -rl -- '' "$__snapexec_n traps"
\builtin trap
\builtin print -rl -- ''
for __snapexec_f in TRAPDEBUG TRAPEXIT TRAPZERR; do
  if (( ${+functions[$__snapexec_f]} )); then \builtin print -rl -- "$__snapexec_n fn $__snapexec_f"; \builtin functions -- $__snapexec_f; \builtin print; fi
done
\builtin trap - DEBUG EXIT ZERR
__snapexec_opts=()
for __snapexec_o in "${__snapexec_on[@]}"; do
  if [[ -o $__snapexec_o ]]; then __snapexec_opts+=("$__snapexec_o on"); else __snapexec_opts+=("$__snapexec_o off"); fi
done
\builtin emulate -R zsh
\builtin print -rl -- "$__snapexec_n options" "${__snapexec_opts[@]}" ''
for __snapexec_f in ${(ok)parameters:#__snapexec_keys*}; do
  case ${parameters[$__snapexec_f]} in
    (*hide*|*readonly*special*) ;;
    (scalar-export|scalar-export-special|scalar-tied-export-special)
      \builtin print -rl -- "$__snapexec_n xvar ${(q)__snapexec_f}" '' ;;
    (*)
      \builtin print -rl -- "$__snapexec_n var ${(q)__snapexec_f}" "${parameters[$__snapexec_f]}"
      \builtin typeset -p -- $__snapexec_f
      \builtin print ;;
  esac
done
for __snapexec_f in ${(ok)functions}; do
  \builtin print -rl -- "$__snapexec_n fn ${(q)__snapexec_f}"
  \builtin functions -- $__snapexec_f
  \builtin print
done
for __snapexec_f in ${(ok)aliases}; do \builtin print -rl -- "$__snapexec_n alias ${(q)__snapexec_f}" "$aliases[$__snapexec_f]"; done
for __snapexec_f in ${(ok)galiases}; do \builtin print -rl -- "$__snapexec_n galias ${(q)__snapexec_f}" "$galiases[$__snapexec_f]"; done
for __snapexec_f in ${(ok)saliases}; do \builtin print -rl -- "$__snapexec_n salias ${(q)__snapexec_f}" "$saliases[$__snapexec_f]"; done
\builtin print -rl -- "$__snapexec_n underscore" "$__snapexec_u"
\builtin print -rl -- "$__snapexec_n umask"; \builtin umask; \builtin print
\builtin print -rl -- "$__snapexec_n limits0" "$__snapexec_limits"
\builtin print -rl -- "$__snapexec_n limits"; \builtin ulimit -S -a; \builtin print -r -- --; \builtin ulimit -H -a; \builtin print
if [[ $PWD != "$__snapexec_pwd" ]]; then \builtin print -rl -- "$__snapexec_n cwd" "$PWD"; fi
if (( ${#dirstack} )); then
  \builtin print -rl -- "$__snapexec_n dirs" ''
  for __snapexec_f in "${dirstack[@]}"; do \builtin print -rl -- "$__snapexec_n dir" "$__snapexec_f"; done
fi
if [[ "$*" != "${__snapexec_args[*]}" || $# != ${#__snapexec_args} ]]; then
  \builtin print -rl -- "$__snapexec_n args" ''
  for __snapexec_f in "$@"; do \builtin print -rl -- "$__snapexec_n arg" "$__snapexec_f"; done
fi
\builtin print -rl -- "$__snapexec_n nameddirs"; \builtin hash -dL; \builtin print
\builtin print -rl -- "$__snapexec_n hash"; \builtin hash -L; \builtin print
\builtin print -rl -- "$__snapexec_n zstyles"; \builtin zstyle -L; \builtin print
\builtin print -rl -- "$__snapexec_n modules" "$__snapexec_mods"
\builtin print -rl -- "$__snapexec_n disabled" "${__snapexec_dis[@]}" ''
for __snapexec_f in "${__snapexec_srcs[@]}" "${functions_source[@]}"; do
  if [[ -n $__snapexec_f && $__snapexec_f != zsh ]]; then \builtin print -rl -- "$__snapexec_n file" "$__snapexec_f"; fi
done
` + zshFdsRecord

// zshDumpEnable notes the builtins the state disabled (__snapexec_dis,
// which the dump's disabled record lists) and enables them, once, before
// the capture runs any: \builtin reaches no disabled one. zshStdoutBack
// and zshDumpBody start with it (a session's end runs the dump alone).
const zshDumpEnable = `if (( ! ${+__snapexec_dis} )); then
  __snapexec_dis=(${(ok)dis_builtins})
  if (( ${#__snapexec_dis} )); then \builtin enable -- "${__snapexec_dis[@]}"; fi
fi
`

// zshDumpEnd ends a dump: the end record, then the environment.
const zshDumpEnd = `\builtin print -rn -- "$__snapexec_n end"$'\n\n\0'
/usr/bin/env -0
`

// zshTerminalCapture is the -c string of a login terminal's capture
// (docs/design/snapshots.md#login-terminals), which Go runs as [shell,
// "-ilc", script] in a session of its own: an interactive login shell, so
// that zsh runs .zshrc (and /etc/zsh/zshrc) itself. zshCaptureEnv listed
// zle's keymaps and widgets before the user's .zshenv; after the dump they
// are listed again, and when the startup files changed them, both
// listings are records (bindings0, bindings), which the restore's .zlogin
// replays (zshTerminalSteps). The dump writes to the capture's own stdout,
// as zshCapture's does (zshStdoutBack), and ends as zshCapture does
// (zshCaptureEnd).
const zshTerminalCapture = zshCaptureStart + zshStdoutBack + zshDumpBody + `__snapexec_keys=$(` + zshKeysListing + `)
if [[ $__snapexec_keys != "$__snapexec_keys0" ]]; then
  \builtin print -rl -- "$__snapexec_n bindings0" "$__snapexec_keys0" "$__snapexec_n bindings" "$__snapexec_keys"
fi
` + zshDumpEnd + zshCaptureEnd

// zshCaptureEnd ends a capture once env has printed the environment: it
// unsets HISTFILE, removes the zshexit hooks (the dump removed the EXIT
// trap and TRAPEXIT) and turns rcs off, so that the capture's shell
// neither saves history nor runs a hook or .zlogout at its exit, which an
// exec would not spare it either: the user's command runs them at its
// own exit, once. zsh ends the -c string, status 1, at an unset of a
// read-only parameter (`readonly HISTFILE`, as hardening guides advise):
// SAVEHIST goes to 0 instead, and the hooks a read-only
// zshexit_functions names are removed as functions.
const zshCaptureEnd = `if [[ ${(t)HISTFILE} != *readonly* ]]; then \builtin unset HISTFILE; elif [[ ${(t)SAVEHIST} != *readonly* ]]; then SAVEHIST=0; fi
if [[ ${(t)zshexit_functions} != *readonly* ]]; then \builtin unset zshexit_functions; else \builtin unfunction -- "${zshexit_functions[@]}" 2>/dev/null; fi
\builtin unfunction zshexit 2>/dev/null
\builtin setopt norcs
`

// zshKeysListing lists the keymap main stands for (bindkey -lL main), the
// bindings of emacs, viins and vicmd (bindkey -LM) and the user's widgets
// (zle -lL), each listing after a line "@@ NAME", which no line of theirs
// starts with.
const zshKeysListing = `{ \builtin print -r -- '@@ main'; \builtin bindkey -lL main
  for __snapexec_m in emacs viins vicmd; do \builtin print -r -- "@@ $__snapexec_m"; \builtin bindkey -LM $__snapexec_m; done
  \builtin print -r -- '@@ widgets'; \builtin zle -lL; } 2>/dev/null`
