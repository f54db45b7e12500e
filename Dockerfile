FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md constraints.txt ./
COPY gateway ./gateway
COPY config ./config
# Dependencies at the exact versions in constraints.txt, so an image built
# later runs what was tested.
RUN pip install --no-cache-dir -c constraints.txt '.[fast]' && useradd --system --home /app reefgate \
    && mkdir -p /app/var && chown reefgate /app/var
USER reefgate
EXPOSE 8787
# Listen on all interfaces inside the container; publish the port to the agent only.
CMD ["reefgate", "serve", "--config", "/app/config", "--host", "0.0.0.0"]
