/**
 * The console's URLs of a table's page and of a repo's upload page, each segment encoded. The
 * upload page sits under `-/`, a segment no table page can have, so a table named `upload` keeps
 * its own page.
 */
const segment = encodeURIComponent;

export function tableHref(owner: string, repo: string, table: string): string {
  return `/${segment(owner)}/${segment(repo)}/${segment(table)}`;
}

export function uploadHref(owner: string, repo: string): string {
  return `/${segment(owner)}/${segment(repo)}/-/upload`;
}
