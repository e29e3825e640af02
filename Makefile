# snapexec: run `make test` for everything CI checks.
GO ?= go

.PHONY: test deps generate run check unit fuzz bench

## test: install what the tests need, check generated code and formatting, run every test with -race.
test: deps check unit

## deps: tools the tests use that a fresh machine may lack (zsh for the snapshot tests).
deps:
	@command -v zsh >/dev/null 2>&1 || { (apt-get update -qq && apt-get install -y -qq zsh >/dev/null) || { echo "zsh is required by the tests: apt-get install zsh"; exit 1; }; }

## generate: regenerate internal/handlers/api.gen.go from api/openapi.yaml.
generate:
	$(GO) generate ./...

## check: generated code up to date, gofmt clean, go vet clean, go.mod tidy.
check:
	@./.ci/check

unit:
	$(GO) test -race -count=1 -timeout 20m ./...

## run: run the server on 127.0.0.1:8080.
run:
	$(GO) run ./cmd/server
