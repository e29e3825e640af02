// Package service is the layer the HTTP handlers call: it turns one request into
// an environment (envpolicy), an optional shell-snapshot replay (shellsnap) and a
// supervised process (exec), and it owns the long-lived state those need.
package service
