package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The probe of the fidelity suite (fidelity_test.go): one script a shell,
// printing the facts a command can observe about the shell that runs it.
// Each fact starts with a header line the parser reads:
//
//	@@ KEY           one fact, whose value is every line up to the next header
//	@@* PREFIX RULE  a list: RULE (factRules) cuts the lines into facts
//	                 keyed "PREFIX subkey"
//
// The probe uses builtins and absolute paths of programs only, quotes every
// expansion and tolerates errexit, nounset, noglob, an odd IFS and the
// profile's aliases, so that whatever a profile turns on, the login shell
// and the replay run the same text and differ only where their states do.
// Its first line reads $_ and its second LINENO, before anything else can
// change them. It ends with a builtin, so that a standby may serve it.

// bashProbe is the probe of bash.
const bashProbe = `printf '@@ $_\n%s\n' "${_-}"
printf '@@ lineno\n%s\n' "${LINENO-}"
printf '@@ $0 $# $-\n%s\n' "$0 $# $-"
printf '@@ $@\n'; printf '<%s>' "$@"; printf '\n'
printf '@@ $! is set\n%s\n' "${!:+yes}"
printf '@@ execution string\n%s\n' "${#BASH_EXECUTION_STRING} ${BASH_EXECUTION_STRING%%$'\n'*}"
printf '@@ hash\n'; hash -l 2>&1 || :
printf '@@ error not found\n'; { fidelity_no_such_command; } 2>&1 || :
printf '@@ error cd\n'; { cd /nonexistent/fidelity; } 2>&1 || :
printf '@@ error syntax\n'; ( eval 'if' ) 2>&1 || :
printf '@@ error unbound\n'; ( set -u; : "$fidelity_unbound" ) 2>&1 || :
printf '@@ status exit 3\n'; ( exit 3 ) || printf '%s\n' "$?"
printf '@@ status child SIGSEGV\n'; { /bin/sh -c 'kill -SEGV $$'; } 2>&1 || printf '%s\n' "$?"
printf '@@ brace\n'; printf '<%s>' {a,b}; printf '\n'
printf '@@ glob *\n'; ( printf '<%s>' * ) 2>&1 || :; printf '\n'
printf '@@ glob *.zzz\n'; ( printf '<%s>' *.zzz ) 2>&1 || :; printf '\n'
printf '@@ glob @(a).c\n'; ( eval 'printf "<%s>" @(a).c' ) 2>&1 || :; printf '\n'
printf '@@ ifs split\n'; ( fidelity_x='a:b c,d'; printf '<%s>' $fidelity_x ) || :; printf '\n'
printf '@@ pwd\n'; pwd; pwd -P
printf '@@ dirs\n'; dirs -l -p 2>&1 || :
printf '@@ umask\n'; umask; umask -S
printf '@@* set -o first\n'; set -o
printf '@@* shopt first\n'; builtin shopt
printf '@@* alias name\n'; builtin alias -p
printf '@@* trap last\n'; trap -p
printf '@@* complete last\n'; complete -p 2>&1 || :
printf '@@* enable -n last\n'; enable -n
printf '@@* fn-attr last\n'; declare -F
printf '@@* fn bashfn\n'; declare -f
printf '@@* var declare\n'; declare -p
printf '@@* ulimit -S butlast\n'; ulimit -S -a
printf '@@* ulimit -H butlast\n'; ulimit -H -a
`

// zshProbe is the probe of zsh. It lists the options after the variables,
// through names read in an anonymous function under emulate -L zsh: under a
// profile's "emulate sh", zsh's own set -o names options relative to sh's
// defaults ("nonotify"), and $options does not expand.
const zshProbe = `printf '@@ $_\n%s\n' "${_-}"
printf '@@ lineno\n%s\n' "${LINENO-}"
printf '@@ $0 $# $-\n%s\n' "$0 $# $-"
printf '@@ $@\n'; printf '<%s>' "$@"; printf '\n'
printf '@@ $! is set\n%s\n' "${!:+yes}"
printf '@@ execution string\n%s\n' "${#ZSH_EXECUTION_STRING} ${ZSH_EXECUTION_STRING%%$'\n'*}"
printf '@@ eval context\n%s\n' "${zsh_eval_context[*]}"
printf '@@ error not found\n'; { fidelity_no_such_command; } 2>&1 || :
printf '@@ error cd\n'; { cd /nonexistent/fidelity; } 2>&1 || :
printf '@@ error syntax\n'; ( eval 'if' ) 2>&1 || :
printf '@@ error unbound\n'; ( set -u; : "$fidelity_unbound" ) 2>&1 || :
printf '@@ status exit 3\n'; ( exit 3 ) || printf '%s\n' "$?"
printf '@@ status child SIGSEGV\n'; { /bin/sh -c 'kill -SEGV $$'; } 2>&1 || printf '%s\n' "$?"
printf '@@ brace\n'; printf '<%s>' {a,b}; printf '\n'
printf '@@ glob *\n'; ( printf '<%s>' * ) 2>&1 || :; printf '\n'
printf '@@ glob *.zzz\n'; ( printf '<%s>' *.zzz ) 2>&1 || :; printf '\n'
printf '@@ glob @(a).c\n'; ( eval 'printf "<%s>" @(a).c' ) 2>&1 || :; printf '\n'
printf '@@ ifs split\n'; ( fidelity_x='a:b c,d'; printf '<%s>' $fidelity_x ) || :; printf '\n'
printf '@@ pwd\n'; pwd; pwd -P
printf '@@ dirs\n'; dirs -l -p 2>&1 || :
printf '@@ umask\n'; umask; umask -S
printf '@@* alias name\n'; alias -L
printf '@@* trap last\n'; trap
printf '@@* named dir name\n'; hash -dL
printf '@@* zstyle line\n'; zstyle -L
printf '@@* zmodload line\n'; zmodload -L
printf '@@* disabled line\n'; disable
printf '@@* fn zshfn\n'; functions
printf '@@* var typeset\n'; typeset -p
() { emulate -L zsh; typeset -ga fidelity_opts; fidelity_opts=(${(ko)options}); }
printf '@@* set -o first\n'; for fidelity_o in "${fidelity_opts[@]}"; do if [[ -o $fidelity_o ]]; then printf '%s on\n' "$fidelity_o"; else printf '%s off\n' "$fidelity_o"; fi; done
printf '@@* ulimit -S butlast\n'; ulimit -S -a
printf '@@* ulimit -H butlast\n'; ulimit -H -a
`

// shProbe is the probe of a POSIX sh (dash here). dash cannot list
// functions: the profile names the ones to look for (fidelityProfile.funcs).
const shProbe = `printf '@@ $_\n%s\n' "${_-}"
printf '@@ lineno\n%s\n' "${LINENO-}"
printf '@@ $0 $# $-\n%s\n' "$0 $# $-"
printf '@@ $@\n'; printf '<%s>' "$@"; printf '\n'
printf '@@ $! is set\n%s\n' "${!:+yes}"
printf '@@ hash\n'; hash 2>&1 || :
printf '@@ error not found\n'; { fidelity_no_such_command; } 2>&1 || :
printf '@@ error cd\n'; ( cd /nonexistent/fidelity ) 2>&1 || :
printf '@@ error syntax\n'; ( eval 'if' ) 2>&1 || :
printf '@@ error unbound\n'; ( set -u; : "$fidelity_unbound" ) 2>&1 || :
printf '@@ status exit 3\n'; ( exit 3 ) || printf '%s\n' "$?"
printf '@@ status child SIGSEGV\n'; { /bin/sh -c 'kill -SEGV $$'; } 2>&1 || printf '%s\n' "$?"
printf '@@ brace\n'; printf '<%s>' {a,b}; printf '\n'
printf '@@ glob *\n'; ( printf '<%s>' * ) 2>&1 || :; printf '\n'
printf '@@ glob *.zzz\n'; ( printf '<%s>' *.zzz ) 2>&1 || :; printf '\n'
printf '@@ ifs split\n'; ( fidelity_x='a:b c,d'; printf '<%s>' $fidelity_x ) || :; printf '\n'
printf '@@ pwd\n'; pwd; pwd -P
printf '@@ umask\n'; umask; umask -S
printf '@@* set -o first\n'; set -o
printf '@@* alias kv\n'; alias
printf '@@* trap last\n'; trap
printf '@@* export name\n'; export -p
printf '@@* readonly name\n'; readonly -p
printf '@@* var set\n'; set
printf '@@* ulimit -S butlast\n'; ulimit -S -a
printf '@@* ulimit -H butlast\n'; ulimit -H -a
`

// probeProcess is the end of every probe: the shell's process and a child's,
// as /proc shows them, and the child's environment.
const probeProcess = `printf '@@* shell status shellproc\n'; /bin/cat /proc/$$/status
printf '@@ shell cmdline\n'; /bin/cat /proc/$$/cmdline; printf '\n'
printf '@@ shell environ\n'; /bin/cat /proc/$$/environ; printf '\n'
printf '@@ shell fds\n'; printf '%s\n' /proc/$$/fd/*
printf '@@* env nul\n'; /usr/bin/env -0; printf '\n'
printf '@@* child status proc\n'; /bin/cat /proc/self/status
printf '@@* child limits limits\n'; /bin/cat /proc/self/limits
`

// probeEnd ends every probe; what follows it (an EXIT trap's output) is the
// fact "after end".
const probeEnd = "printf '@@ end\\n'\n"

// probeScript returns the probe of shell with the profile's extra lines,
// for the functions funcs where the shell cannot list its own.
func probeScript(shell string, funcs []string, extra string) string {
	var b strings.Builder
	switch shell {
	case "bash":
		b.WriteString(bashProbe)
	case "zsh":
		b.WriteString(zshProbe)
	default:
		b.WriteString(shProbe)
		for _, name := range funcs {
			fmt.Fprintf(&b, "printf '@@ fn %s\\n'; type %s 2>&1 || :\n", name, name)
		}
	}
	b.WriteString(probeProcess)
	b.WriteString(extra)
	b.WriteString(probeEnd)
	return b.String()
}

// fact is one line of the comparison: a key and what the shell printed.
type fact struct{ key, value string }

// parseProbe cuts a probe's stdout into facts. Text before the first header
// (the login profile's own output) is the fact "stdout before probe"; a
// script without headers gives only that fact, named "stdout". script is the
// text the shell was given, which "shell cmdline" is compared with.
func parseProbe(out, script string) []fact {
	var facts []fact
	seen := map[string]int{}
	add := func(key, value string) {
		seen[key]++
		if n := seen[key]; n > 1 {
			key += " #" + strconv.Itoa(n)
		}
		facts = append(facts, fact{key, value})
	}
	starts := headerStarts(out)
	if len(starts) == 0 {
		add("stdout", out)
		return facts
	}
	if starts[0] > 0 {
		add("stdout before probe", out[:starts[0]])
	}
	for i, start := range starts {
		end := len(out)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		header, body, _ := strings.Cut(out[start:end], "\n")
		body = strings.TrimSuffix(body, "\n")
		if key, ok := strings.CutPrefix(header, "@@ "); ok {
			switch key {
			case "end":
				if body != "" {
					add("after end", body)
				}
			case "shell cmdline":
				add(key, summarizeCmdline(body, script))
			case "shell environ":
				add(key, environNames(body))
			default:
				add(key, body)
			}
			continue
		}
		spec := strings.TrimPrefix(header, "@@* ")
		cut := strings.LastIndexByte(spec, ' ')
		prefix, rule := spec[:cut], spec[cut+1:]
		split, ok := factRules[rule]
		if !ok {
			add(header, "unknown rule "+rule)
			continue
		}
		for _, f := range split(body) {
			add(prefix+" "+f.key, f.value)
		}
	}
	return facts
}

// headerStarts returns the offsets of the header lines of out.
func headerStarts(out string) []int {
	var starts []int
	for i := 0; i < len(out); {
		if strings.HasPrefix(out[i:], "@@ ") || strings.HasPrefix(out[i:], "@@* ") {
			starts = append(starts, i)
		}
		next := strings.IndexByte(out[i:], '\n')
		if next < 0 {
			break
		}
		i += next + 1
	}
	return starts
}

// factRules cut a list section of the probe into facts.
var factRules = map[string]func(body string) []fact{
	// first: the first word is the key, the rest the value (set -o, shopt).
	"first": eachLine(func(line string) (string, string) {
		f := strings.Fields(line)
		return f[0], strings.Join(f[1:], " ")
	}),
	// last: the last word is the key (trap -p, complete -p, declare -F).
	"last": eachLine(func(line string) (string, string) {
		f := strings.Fields(line)
		return f[len(f)-1], line
	}),
	// butlast: the last word is the value (ulimit -a).
	"butlast": eachLine(func(line string) (string, string) {
		f := strings.Fields(line)
		return strings.Join(f[:len(f)-1], " "), f[len(f)-1]
	}),
	// line: the line is the key (zstyle -L, zmodload -L).
	"line": eachLine(func(line string) (string, string) { return line, "present" }),
	// name: the name of a "command -flags name=value" line (alias -p).
	"name": eachLine(func(line string) (string, string) {
		f := strings.Fields(line)
		i := 1
		for i < len(f)-1 && strings.HasPrefix(f[i], "-") {
			i++
		}
		name, _, _ := strings.Cut(strings.Join(f[min(i, len(f)-1):], " "), "=")
		return name, line
	}),
	// kv: the name of a "name=value" line (dash's alias).
	"kv": eachLine(func(line string) (string, string) {
		name, _, _ := strings.Cut(line, "=")
		return name, line
	}),
	"declare":   entries(matchName(`^declare -[-a-zA-Z]+ ([A-Za-z_][A-Za-z0-9_]*)(=|$)`), bashVolatile),
	"typeset":   entries(zshParameter, zshVolatile),
	"set":       entries(matchName(`^([A-Za-z_][A-Za-z0-9_]*)=`), shVolatile),
	"bashfn":    entries(matchName(`^(?:function )?(\S+) \(\) ?$`), nil),
	"zshfn":     entries(matchName(`^(\S+) \(\) \{$`), nil),
	"nul":       nulList,
	"proc":      procStatus(procFields),
	"shellproc": procStatus(shellProcFields),
	"limits": eachLine(func(line string) (string, string) {
		if len(line) < 26 {
			return line, ""
		}
		return strings.TrimSpace(line[:26]), strings.Join(strings.Fields(line[26:]), " ")
	}),
}

// eachLine makes a rule that keys each non-empty line by kv.
func eachLine(kv func(line string) (key, value string)) func(string) []fact {
	return func(body string) []fact {
		var facts []fact
		for line := range strings.SplitSeq(body, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			k, v := kv(line)
			facts = append(facts, fact{k, v})
		}
		return facts
	}
}

// entries makes a rule for a dump whose entries start with a line that start
// names and go on to the next such line, leaving out the names in skip.
func entries(start func(line string) (string, bool), skip map[string]string) func(string) []fact {
	return func(body string) []fact {
		var facts []fact
		for line := range strings.SplitSeq(body, "\n") {
			if name, ok := start(line); ok {
				facts = append(facts, fact{name, line})
			} else if len(facts) > 0 {
				facts[len(facts)-1].value += "\n" + line
			}
		}
		return slices.DeleteFunc(facts, func(f fact) bool { _, ok := skip[f.key]; return ok })
	}
}

// matchName returns a start function for entries: a line matching expr
// starts an entry named by its first group.
func matchName(expr string) func(string) (string, bool) {
	re := regexp.MustCompile(expr)
	return func(line string) (string, bool) {
		if m := re.FindStringSubmatch(line); m != nil {
			return m[1], true
		}
		return "", false
	}
}

// zshParameter starts an entry of zsh's typeset -p: "typeset -i10 X=1",
// "export -T PATH path=( ... )" (named by its last name before the "=").
func zshParameter(line string) (string, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "typeset" && f[0] != "export" && f[0] != "readonly" {
		return "", false
	}
	left, _, _ := strings.Cut(line, "=")
	f = strings.Fields(left)
	return f[len(f)-1], true
}

// nulList cuts the NUL-separated NAME=VALUE strings of env -0.
func nulList(body string) []fact {
	var facts []fact
	for entry := range strings.SplitSeq(strings.TrimSuffix(body, "\n"), "\x00") {
		if entry != "" {
			name, value, _ := strings.Cut(entry, "=")
			facts = append(facts, fact{name, value})
		}
	}
	return facts
}

// environNames lists the names of the shell's initial environment
// (/proc/PID/environ), the values left out: a replay's holds the whole
// state, which would only repeat the other facts.
func environNames(body string) string {
	var names []string
	for _, f := range nulList(body) {
		names = append(names, f.key)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// procFields are the lines of /proc/PID/status that describe what a process
// inherited (signal dispositions and mask, credentials, capabilities,
// sandboxing, umask). The others are counters and addresses that differ
// between any two processes.
var procFields = map[string]bool{
	"Name": true, "Umask": true, "SigPnd": true, "ShdPnd": true, "SigBlk": true, "SigIgn": true, "SigCgt": true,
	"Uid": true, "Gid": true, "Groups": true, "CapInh": true, "CapPrm": true, "CapEff": true, "CapBnd": true, "CapAmb": true,
	"NoNewPrivs": true, "Seccomp": true, "Seccomp_filters": true, "Cpus_allowed_list": true, "Mems_allowed_list": true,
}

// shellProcFields are procFields but the pending and blocked signals: the
// shell blocks and unblocks signals around the child it waits for, so they
// depend on the moment cat reads them. The child's show what it inherited.
var shellProcFields = func() map[string]bool {
	m := maps.Clone(procFields)
	delete(m, "SigPnd")
	delete(m, "ShdPnd")
	delete(m, "SigBlk")
	return m
}()

// procStatus makes a rule keeping the fields of /proc/PID/status.
func procStatus(fields map[string]bool) func(string) []fact {
	return func(body string) []fact {
		var facts []fact
		for line := range strings.SplitSeq(body, "\n") {
			key, value, ok := strings.Cut(line, ":")
			if ok && fields[key] {
				facts = append(facts, fact{key, strings.TrimSpace(value)})
			}
		}
		return facts
	}
}

// summarizeCmdline describes the shell's /proc/PID/cmdline: its first two
// words, and whether the third is the script the client sent.
func summarizeCmdline(raw, script string) string {
	argv := strings.Split(strings.TrimSuffix(raw, "\x00"), "\x00")
	var b strings.Builder
	fmt.Fprintf(&b, "argc %d", len(argv))
	for i, arg := range argv {
		switch {
		case i < 2:
			fmt.Fprintf(&b, " %q", arg)
		case i == 2 && arg == script:
			b.WriteString(" <the script>")
		case i == 2:
			fmt.Fprintf(&b, " <another text of %d bytes>", len(arg))
		}
	}
	return b.String()
}

// The volatile variables of each shell: they change by themselves (time,
// randomness, process ids), or have a fact of their own (LINENO and the
// execution string), so the dump of variables leaves them out.
var (
	bashVolatile = map[string]string{
		"RANDOM": "random", "SRANDOM": "random", "SECONDS": "time", "EPOCHSECONDS": "time", "EPOCHREALTIME": "time",
		"BASHPID": "pid", "PPID": "pid", "LINENO": "fact lineno", "BASH_EXECUTION_STRING": "fact execution string",
	}
	zshVolatile = map[string]string{
		"RANDOM": "random", "SECONDS": "time", "EPOCHSECONDS": "time", "EPOCHREALTIME": "time", "epochtime": "time",
		"TTYIDLE": "time", "PPID": "pid", "LINENO": "fact lineno", "ZSH_EXECUTION_STRING": "fact execution string",
	}
	shVolatile = map[string]string{"PPID": "pid", "LINENO": "fact lineno"}
)

func TestParseProbe(t *testing.T) {
	tests := []struct {
		name, out string
		want      []fact
	}{
		{"no headers", "before\n", []fact{{"stdout", "before\n"}}},
		{"profile output, a fact, an EXIT trap after the end", "Welcome\n@@ pwd\n/w\n/w\n@@ end\nbye\n",
			[]fact{{"stdout before probe", "Welcome\n"}, {"pwd", "/w\n/w"}, {"after end", "bye"}}},
		{"bash variables: multi-line values, volatile ones left out", "@@* var declare\ndeclare -x A=\"1\"\ndeclare -- NL=\"x\ny\"\ndeclare -i RANDOM=\"7\"\ndeclare -ar RO=([0]=\"a\")\n",
			[]fact{{"var A", `declare -x A="1"`}, {"var NL", "declare -- NL=\"x\ny\""}, {"var RO", `declare -ar RO=([0]="a")`}}},
		{"zsh parameters: tied pairs by their last name, repeated", "@@* var typeset\nexport -T PATH path=( /bin )\ntypeset -aT PATH path=( /bin )\ntypeset -i10 SECONDS=0\ntypeset 0=zsh\n",
			[]fact{{"var path", "export -T PATH path=( /bin )"}, {"var path #2", "typeset -aT PATH path=( /bin )"}, {"var 0", "typeset 0=zsh"}}},
		{"bash functions, one printed with the function keyword", "@@* fn bashfn\ng () \n{ \n    :\n}\nfunction if () \n{ \n    :\n}\n",
			[]fact{{"fn g", "g () \n{ \n    :\n}"}, {"fn if", "function if () \n{ \n    :\n}"}}},
		{"list rules", "@@* set -o first\nerrexit        \toff\n@@* trap last\ntrap -- '' SIGHUP\n@@* ulimit -S butlast\nopen files   (-n) 1024\n@@* alias name\nalias -g G='| grep'\n",
			[]fact{{"set -o errexit", "off"}, {"trap SIGHUP", "trap -- '' SIGHUP"}, {"ulimit -S open files (-n)", "1024"}, {"alias G", "alias -g G='| grep'"}}},
		{"env -0 and /proc", "@@* env nul\nA=1\x00B=x\ny\x00\n@@* child status proc\nName:\tcat\nSigIgn:\t0000000000001001\nVmRSS:\t100 kB\n",
			[]fact{{"env A", "1"}, {"env B", "x\ny"}, {"child status Name", "cat"}, {"child status SigIgn", "0000000000001001"}}},
		{"the shell's command line and environment", "@@ shell cmdline\n/bin/bash\x00-lc\x00echo\x00\n@@ shell environ\nPATH=/bin\x00HOME=/h\x00\n",
			[]fact{{"shell cmdline", `argc 3 "/bin/bash" "-lc" <the script>`}, {"shell environ", "HOME PATH"}}},
	}
	for _, tt := range tests {
		if got := parseProbe(tt.out, "echo"); !slices.Equal(got, tt.want) {
			t.Errorf("%s: parseProbe(%q) =\n%q\nwant\n%q", tt.name, tt.out, got, tt.want)
		}
	}
}
