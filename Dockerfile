# The manager image: one static binary on an empty base, so building it pulls
# nothing. `make docker-build` compiles bin/docker/manager first (CGO_ENABLED=0,
# for the target platform) and then runs `docker build`; a multi-stage build would
# need a Go base image, which no registry here serves.
FROM scratch
LABEL org.opencontainers.image.title="sandbox-controller" \
      org.opencontainers.image.description="Kubernetes controller that runs throwaway Postgres, Redis and Mongo containers for AI agents"
COPY bin/docker/manager /manager
# Note: non-root by default; config/manager runs it as uid 0 (without any
# capability) only because a node's Docker socket is owned by root.
USER 65532:65532
ENTRYPOINT ["/manager"]
