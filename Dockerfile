# syntax=docker/dockerfile:1
#
# The praetor image: one static binary (engines, migrations, JSON Schemas and
# the web page are embedded in it) on distroless, run as an unprivileged user.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t praetor .
#   docker run --rm praetor version
#
# ENTRYPOINT is the binary and CMD its default command, so a Kubernetes
# container or a compose service chooses the command with args alone:
# ["serve", "--services", "runner"], ["migrate"], ["replay", ...].

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, in their own layer and cache, so a source change does not
# download them again.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=bind,source=go.mod,target=go.mod \
    --mount=type=bind,source=go.sum,target=go.sum \
    go mod download
ARG TARGETOS TARGETARCH
ARG VERSION=dev
# Pure Go (modernc SQLite, no cgo): CGO_ENABLED=0 gives a static binary that
# runs on distroless/static. The cross-compile to TARGETARCH happens on the
# build platform, without emulation.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    --mount=type=bind,target=. \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false \
      -ldflags="-s -w -X main.version=${VERSION}" \
      -o /out/praetor ./cmd/praetor

# distroless/static: CA certificates (for an OpenAI-compatible endpoint over
# TLS), /etc/passwd with nonroot, tzdata, and no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/praetor /praetor
# 65532 is distroless's nonroot; numeric so runAsNonRoot can verify it.
USER 65532:65532
# HTTP API, page, /healthz, /readyz, /metrics (serve's --http-addr
# 0.0.0.0:8080); the memory service's MCP at /mcp on the same port.
EXPOSE 8080
ENTRYPOINT ["/praetor"]
CMD ["serve"]
