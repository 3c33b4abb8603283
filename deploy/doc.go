// Package deploy holds deployment manifests; its tests check them against the code.
// The Helm chart's tests (helm_test.go) need a helm binary and run with the build
// tag "helm" (go test -tags helm ./deploy/; see docs/deploy.md, "Helm chart").
package deploy
