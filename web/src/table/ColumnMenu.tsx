import * as DropdownMenu from '@radix-ui/react-dropdown-menu';
import { useRef } from 'react';

export type ColumnAction = 'rename' | 'retype' | 'drop';

/**
 * The owner's menu on a column header: Rename column, Change type, Delete column. Choosing one
 * opens its dialog, which takes the focus (the menu does not hand it back to its button).
 */
export function ColumnMenu({ column, onAction }: { column: string; onAction(action: ColumnAction, trigger: HTMLElement | null): void }) {
  const trigger = useRef<HTMLButtonElement>(null);
  const chosen = useRef(false);
  const choose = (action: ColumnAction) => () => {
    chosen.current = true;
    onAction(action, trigger.current);
  };
  return (
    <DropdownMenu.Root modal={false}>
      <DropdownMenu.Trigger asChild>
        <button ref={trigger} type="button" className="col-menu" aria-label={`Actions for column ${column}`}>
          <span aria-hidden="true">⋮</span>
        </button>
      </DropdownMenu.Trigger>
      <DropdownMenu.Portal>
        <DropdownMenu.Content
          className="menu"
          align="end"
          sideOffset={4}
          onCloseAutoFocus={(e) => {
            if (chosen.current) e.preventDefault();
            chosen.current = false;
          }}
        >
          <DropdownMenu.Item className="menu-item" onSelect={choose('rename')}>
            Rename column
          </DropdownMenu.Item>
          <DropdownMenu.Item className="menu-item" onSelect={choose('retype')}>
            Change type
          </DropdownMenu.Item>
          <DropdownMenu.Separator className="menu-separator" />
          <DropdownMenu.Item className="menu-item menu-item-danger" onSelect={choose('drop')}>
            Delete column
          </DropdownMenu.Item>
        </DropdownMenu.Content>
      </DropdownMenu.Portal>
    </DropdownMenu.Root>
  );
}
