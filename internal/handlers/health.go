package handlers

import (
	"bytes"
	"context"
)

// Healthz answers as long as the process serves HTTP.
func (s *Server) Healthz(context.Context, HealthzRequestObject) (HealthzResponseObject, error) {
	return Healthz200JSONResponse{Status: Ok, Version: &s.version}, nil
}

// Readyz answers 503 once the server has begun shutting down.
func (s *Server) Readyz(context.Context, ReadyzRequestObject) (ReadyzResponseObject, error) {
	if s.gate.ShuttingDown() {
		return nil, errShuttingDown
	}
	return Readyz200JSONResponse{Status: Ok, Version: &s.version}, nil
}

// GetOpenAPI serves the contract as committed.
func (s *Server) GetOpenAPI(context.Context, GetOpenAPIRequestObject) (GetOpenAPIResponseObject, error) {
	return GetOpenAPI200ApplicationyamlResponse{Body: bytes.NewReader(s.spec), ContentLength: int64(len(s.spec))}, nil
}
