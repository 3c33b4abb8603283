// Package deploy holds deployment manifests; its tests check them against the code.
package deploy
