import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { acceptInvite, addMember, listMembers, listOrgs, removeMember, switchProject, updateMember, type MemberFields } from '../api/orgs';
import type { OrgRole } from '../api/types';

/** The signed-in user's organizations (with its role in each); only for a session. */
export function useOrgs(enabled = true) {
  return useQuery({ queryKey: ['orgs'], queryFn: listOrgs, enabled, staleTime: 60_000 });
}

/** An organization's members (owners and admins only: 403/404 otherwise). */
export function useMembers(org: string) {
  return useQuery({ queryKey: ['members', org], queryFn: () => listMembers(org) });
}

/** Invite (add), change and remove members; each refreshes the list. */
export function useMemberActions(org: string) {
  const qc = useQueryClient();
  const done = () => qc.invalidateQueries({ queryKey: ['members', org] });
  return {
    add: useMutation({ mutationFn: (v: MemberFields & { username: string; orgRole: OrgRole }) => addMember(org, v), onSuccess: done }),
    update: useMutation({ mutationFn: (v: { username: string; change: MemberFields }) => updateMember(org, v.username, v.change), onSuccess: done }),
    remove: useMutation({ mutationFn: (username: string) => removeMember(org, username), onSuccess: done }),
  };
}

/** Switches the session's project: every cached answer was of the old project, so all are dropped. */
export function useSwitchProject() {
  const qc = useQueryClient();
  return useMutation({ mutationFn: switchProject, onSuccess: () => qc.resetQueries() });
}

export function useAcceptInvite() {
  return useMutation({ mutationFn: (v: { token: string; password: string }) => acceptInvite(v.token, v.password) });
}
