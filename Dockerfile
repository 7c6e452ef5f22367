# syntax=docker/dockerfile:1
#
# incidentbot in a container: a static binary on a distroless base, running
# as a non-root user, with its data (SQLite activity store, saved search
# index) in the /data volume.
#
#   docker build -t incidentbot --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) .
#   docker run --rm -e SLACK_APP_TOKEN -e SLACK_BOT_TOKEN -v incidentbot-data:/data incidentbot

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# Dependencies first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG REVISION=""
# CGO_ENABLED=0: the SQLite driver is pure Go, so the binary is static and
# needs no libc in the final image.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" -o /out/incidentbot ./cmd/incidentbot
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/incidentbot /usr/local/bin/incidentbot
COPY --from=build --chown=65532:65532 /out/data /data
# nonroot is uid 65532 in distroless.
USER 65532:65532
ENV INCIDENTBOT_DB=/data/activity.db \
    INCIDENTBOT_INDEX_DIR=/data/index \
    INCIDENTBOT_LISTEN=:8080 \
    INCIDENTBOT_LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/incidentbot"]
CMD ["run"]
