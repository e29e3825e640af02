package service

import (
	"context"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/snapexec/snapexec/internal/envpolicy"
	"github.com/snapexec/snapexec/internal/exec"
)

// ExecInput is one command to run, as a client asked for it.
type ExecInput struct {
	Argv []string
	Cwd  string
	// Env is the request's env: without EnvPolicy exactly the child's
	// environment, with it laid over the policy's result.
	Env       map[string]string
	EnvPolicy *envpolicy.Policy
	Stdin     []byte
	Timeout   time.Duration
}

// ExecOutput is a command's ending.
type ExecOutput struct {
	ProcessID string
	Pid       int
	Result    exec.Result
}

// Service runs commands.
type Service struct {
	procs     *exec.Manager
	serverEnv map[string]string
}

// New returns a Service that runs processes through procs. serverEnv is the
// server's own environment (NAME=VALUE pairs), which an envPolicy inherits from.
func New(procs *exec.Manager, serverEnv []string) *Service {
	return &Service{procs: procs, serverEnv: envMap(serverEnv)}
}

// Exec runs in to completion. If ctx ends first, the process group is
// terminated and its ending is still returned.
func (s *Service) Exec(ctx context.Context, in ExecInput) (ExecOutput, error) {
	p, err := s.procs.Run(ctx, exec.Spec{
		Argv:    in.Argv,
		Dir:     in.Cwd,
		Env:     envList(s.childEnv(in)),
		Stdin:   in.Stdin,
		Timeout: in.Timeout,
	})
	if err != nil {
		return ExecOutput{}, err
	}
	return ExecOutput{ProcessID: p.ID(), Pid: p.Pid(), Result: p.Result()}, nil
}

// childEnv is the environment of in's child (SHELL-SNAPSHOTS.md 6.1): with a
// policy, the policy applied to the server's environment with the request's
// env laid over it; without one, exactly the request's env. Never-inherited
// names are dropped either way.
func (s *Service) childEnv(in ExecInput) map[string]string {
	env := make(map[string]string, len(in.Env))
	if in.EnvPolicy != nil {
		env = envpolicy.Apply(*in.EnvPolicy, s.serverEnv)
	}
	maps.Copy(env, in.Env)
	envpolicy.DropNeverInherited(env)
	return env
}

// envMap turns NAME=VALUE pairs into a map; a later pair wins.
func envMap(list []string) map[string]string {
	env := make(map[string]string, len(list))
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}

// envList turns a map into NAME=VALUE pairs in a stable order.
func envList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list
}
