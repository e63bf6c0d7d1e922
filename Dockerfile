# syntax=docker/dockerfile:1
#
# One image for every container of docker-compose.yml: the entrypoint is the
# switchboard binary and each container's command picks the service
# (registry, mailbox, bridge, gateway, host, certs, health).
# Build it with `make images`; docs/deploy.md says how to run it.

FROM golang:1.27.3 AS build
WORKDIR /src
COPY . .
# Static binaries (CGO off): the final image has no C library.
# The cache mounts keep modules and build results between image builds.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/switchboard ./cli/cmd/switchboard
# The example host's tool: the image has no shell or coreutils to echo with.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/switchboard-echo ./deploy/cmd/switchboard-echo
# The MCP conformance server the example bridge mounts over stdio, fetched
# and built here (outside the workspace, at the version tools/go.mod pins).
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOWORK=off GOBIN=/out CGO_ENABLED=0 go install -trimpath -ldflags="-s -w" github.com/modelcontextprotocol/go-sdk/conformance/everything-server@v1.8.0
# Mount points of the named volumes: a new volume takes the owner of the
# image's directory, so these must exist and belong to the non-root user.
RUN mkdir -p /out/certs /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchboard /switchboard
COPY --from=build /out/switchboard-echo /usr/local/bin/switchboard-echo
COPY --from=build /out/everything-server /usr/local/bin/everything-server
COPY --from=build --chown=65532:65532 /out/certs /certs
COPY --from=build --chown=65532:65532 /out/data /data
# Every container runs as this user but three, which compose starts as
# root: the certs step (it gives each process's directory to its reader),
# and the bridge and the example host, which read a root-only key and then
# become this user (--run-as) before they run anyone's programs.
USER 65532:65532
EXPOSE 4222 7731 7732 7733 8080
ENTRYPOINT ["/switchboard"]
CMD ["help"]
