// Package api embeds the OpenAPI contract so the server can serve it as written.
package api

import _ "embed"

// Spec is the OpenAPI document, byte for byte as committed in api/openapi.yaml.
//
//go:embed openapi.yaml
var Spec []byte
