/** The console's URL of a repo: /<owner>/<repo>, each segment encoded. */
export function repoHref(owner: string, repo: string): string {
  return `/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;
}
