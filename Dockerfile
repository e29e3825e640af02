# snapexec container image.
#
#   docker build -t snapexec .
#   docker run --rm -p 127.0.0.1:8080:8080 -e SNAPEXEC_TOKEN="$(head -c 32 /dev/urandom | base64)" snapexec
#
# The image listens on 0.0.0.0:8080, so the server refuses to start without a
# token (SNAPEXEC_TOKEN, or SNAPEXEC_TOKEN_FILE naming a mounted secret). See
# deploy/README.md for the compose stack and SECURITY.md for what a token holder
# can do: anything the snapexec user in this container can.
#
# Every base image is pinned to a version tag and that tag's digest (its
# multi-platform index), so a rebuild gets the same base until both are
# changed together; deploy/compose_test.go fails on an unpinned FROM.

FROM golang:1.26.8-bookworm@sha256:f4191582e1522dfc5980a6bdc0309a756f9697f3e7d0f199c7e26fc82ab324fd AS build
WORKDIR /src
# Modules resolve in their own layer, reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/snapexec ./cmd/server

FROM debian:bookworm-20260918-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251
# bash and zsh: the shells whose login environment snapexec snapshots.
# coreutils is already in the base (essential); curl serves HEALTHCHECK.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bash zsh coreutils ca-certificates curl \
    && rm -rf /var/lib/apt/lists/*
# A user of its own with a real HOME: commands run as this user, and a login
# shell sources the profile under its HOME.
RUN groupadd --gid 10001 snapexec \
    && useradd --uid 10001 --gid 10001 --create-home --home-dir /home/snapexec --shell /bin/bash snapexec
COPY --from=build /out/snapexec /usr/local/bin/snapexec
ENV SNAPEXEC_ADDR=0.0.0.0:8080
EXPOSE 8080
WORKDIR /home/snapexec
USER snapexec
# /healthz needs no token. 127.0.0.1 is a loopback Host, which the server's
# Host check always accepts.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/snapexec"]
