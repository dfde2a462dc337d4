# One image for every service; docker-compose picks the process with SERVICE.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
# Two malloc arenas: libvips' threads otherwise keep freed image memory per arena (decision 0117).
ENV NODE_ENV=production HOST=0.0.0.0 MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
USER node
ENV SERVICE=gateway
CMD ["sh", "-c", "exec node dist/services/${SERVICE}/main.js"]
