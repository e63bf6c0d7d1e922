// Package gen holds the code and documents generated from proto/ by
// `make generate`. Everything under go/ and openapi/ is generated and
// committed; this file is the one hand-written piece, so the gateway can
// serve the OpenAPI documents without reading files at run time.
package gen

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document of every REST route: those of every
// service (proto/http_routes.yaml, through gnostic's generator) and those
// the gateway serves by hand (proto/openapi_handwritten.yaml), written by
// tools/protoc-gen-openapi31.
//
//go:embed openapi/switchboard.openapi.json
var OpenAPI []byte

// OpenAPIv2 is the Swagger 2.0 document protoc-gen-openapiv2 wrote for the
// services' REST routes, kept for tools that read only that.
//
//go:embed openapi/switchboard.swagger.json
var OpenAPIv2 []byte
