package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clusterNamespace is the namespace whose UID names a cluster: every cluster has
// it from its first start, and its UID is never reused by another.
const clusterNamespace = "kube-system"

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get,resourceNames=kube-system

// ClusterInstance is the instance of a control plane whose Options.Instance is
// empty: "cluster-" and the UID of its kube-system namespace. Two clusters never
// derive the same one, so control planes left at the default on one Docker host
// never take each other's containers for stale or orphaned.
func ClusterInstance(ctx context.Context, reader client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: clusterNamespace}, ns); err != nil {
		return "", fmt.Errorf("--instance is empty, and this cluster's identity (the UID of namespace %s) cannot be read: %w; "+
			"grant the manager get on namespaces/%s (config/rbac does), or name this control plane with --instance", clusterNamespace, err, clusterNamespace)
	}
	return "cluster-" + string(ns.UID), nil
}
