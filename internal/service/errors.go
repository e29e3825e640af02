package service

import "errors"

// ErrNotFound means the process or snapshot scope asked for does not exist.
var ErrNotFound = errors.New("not found")
