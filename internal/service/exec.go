package service

import (
	"context"
	"sort"
	"time"

	"github.com/snapexec/snapexec/internal/exec"
)

// ExecInput is one command to run, as a client asked for it.
type ExecInput struct {
	Argv    []string
	Cwd     string
	Env     map[string]string
	Stdin   []byte
	Timeout time.Duration
}

// ExecOutput is a command's ending.
type ExecOutput struct {
	ProcessID string
	Pid       int
	Result    exec.Result
}

// Service runs commands.
type Service struct {
	procs *exec.Manager
}

// New returns a Service that runs processes through procs.
func New(procs *exec.Manager) *Service {
	return &Service{procs: procs}
}

// Exec runs in to completion. If ctx ends first, the process group is
// terminated and its ending is still returned.
func (s *Service) Exec(ctx context.Context, in ExecInput) (ExecOutput, error) {
	p, err := s.procs.Run(ctx, exec.Spec{
		Argv:    in.Argv,
		Dir:     in.Cwd,
		Env:     envList(in.Env),
		Stdin:   in.Stdin,
		Timeout: in.Timeout,
	})
	if err != nil {
		return ExecOutput{}, err
	}
	return ExecOutput{ProcessID: p.ID(), Pid: p.Pid(), Result: p.Result()}, nil
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
