// Package deploy holds the deployment examples (Kubernetes, docker compose)
// and the tests that keep them, the Dockerfile and the LICENSE honest. It
// has no code of its own.
package deploy
