interface Props {
  names: string[];
  data: (string | null)[][];
  total: number;
}

/** The first rows of the file as they will be read: values as text, NULL marked (the empty string stays empty). */
export function PreviewRows({ names, data, total }: Props) {
  const caption = data.length < total ? `The first ${data.length} of ${total.toLocaleString()} rows` : `All ${total.toLocaleString()} ${total === 1 ? 'row' : 'rows'}`;
  if (data.length === 0) return <p className="muted">The file has no data rows.</p>;
  return (
    <div className="upload-preview-scroll" tabIndex={0} role="region" aria-label="First rows, scrollable">
      <table className="upload-preview">
        <caption>{caption}</caption>
        <thead>
          <tr>
            {names.map((name, i) => (
              <th scope="col" key={i}>
                {name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {data.map((row, r) => (
            <tr key={r}>
              {names.map((_, i) => {
                const value = row[i];
                return value === null || value === undefined ? (
                  <td key={i} className="upload-null">
                    NULL
                  </td>
                ) : (
                  <td key={i}>{value}</td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
