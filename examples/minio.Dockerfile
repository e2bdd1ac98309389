# MinIO built from source at the version the tests pin, since prebuilt MinIO
# images may no longer be published. Build from the examples directory:
#
#   docker build -f minio.Dockerfile -t jetlake-example/minio .

FROM golang:1.26 AS build
ARG MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
RUN CGO_ENABLED=0 GOBIN=/out go install github.com/minio/minio@${MINIO_VERSION}

# curl is for the health check and for the createbucket service of
# docker-compose.yml, which signs its request with curl's --aws-sigv4.
FROM alpine:3.22
RUN apk add --no-cache ca-certificates curl
COPY --from=build /out/minio /usr/local/bin/minio
VOLUME ["/data"]
EXPOSE 9000 9001
ENTRYPOINT ["/usr/local/bin/minio"]
CMD ["server", "/data", "--console-address", ":9001"]
